import { onEveryBackend } from '../../helpers/storage-backends.js';
import { contactStoreConformance } from './contact-store.conformance.js';

onEveryBackend(contactStoreConformance);
