import { onEveryBackend } from '../../helpers/storage-backends.js';
import { orgStoreConformance } from './org-store.conformance.js';

onEveryBackend(orgStoreConformance);
