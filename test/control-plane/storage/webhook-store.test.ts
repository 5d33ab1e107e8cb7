import { onEveryBackend } from '../../helpers/storage-backends.js';
import { webhookStoreConformance } from './webhook-store.conformance.js';

onEveryBackend(webhookStoreConformance);
