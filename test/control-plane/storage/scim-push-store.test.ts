import { onEveryBackend } from '../../helpers/storage-backends.js';
import { scimPushStoreConformance } from './scim-push-store.conformance.js';

onEveryBackend(scimPushStoreConformance);
