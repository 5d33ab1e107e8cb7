import { onEveryBackend } from '../../helpers/storage-backends.js';
import { connectionStoreConformance } from './connection-store.conformance.js';

onEveryBackend(connectionStoreConformance);
