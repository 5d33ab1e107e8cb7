import { onEveryBackend } from '../../helpers/storage-backends.js';
import { samlStoreConformance } from './saml-store.conformance.js';

onEveryBackend(samlStoreConformance as never);
