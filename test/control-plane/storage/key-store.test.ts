import { onEveryBackend } from '../../helpers/storage-backends.js';
import { keyStoreConformance } from './key-store.conformance.js';

onEveryBackend(keyStoreConformance as never);
