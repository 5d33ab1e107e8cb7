import { onEveryBackend } from '../../helpers/storage-backends.js';
import { logoutStoreConformance } from './logout-store.conformance.js';

onEveryBackend(logoutStoreConformance);
