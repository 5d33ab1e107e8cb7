import { onEveryBackend } from '../../helpers/storage-backends.js';
import { oidcStoreConformance } from './oidc-store.conformance.js';

onEveryBackend(oidcStoreConformance as never);
