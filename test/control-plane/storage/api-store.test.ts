import { onEveryBackend } from '../../helpers/storage-backends.js';
import { apiStoreConformance } from './api-store.conformance.js';

onEveryBackend(apiStoreConformance);
