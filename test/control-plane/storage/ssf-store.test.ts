import { onEveryBackend } from '../../helpers/storage-backends.js';
import { ssfStoreConformance } from './ssf-store.conformance.js';

onEveryBackend(ssfStoreConformance);
