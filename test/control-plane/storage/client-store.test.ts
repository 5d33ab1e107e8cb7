import { onEveryBackend } from '../../helpers/storage-backends.js';
import { clientStoreConformance } from './client-store.conformance.js';

onEveryBackend(clientStoreConformance as never);
