import { onEveryBackend } from '../../helpers/storage-backends.js';
import { scimStoreConformance } from './scim-store.conformance.js';

onEveryBackend(scimStoreConformance);
