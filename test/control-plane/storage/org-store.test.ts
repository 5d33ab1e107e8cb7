import { onEveryBackend } from '../../helpers/storage-backends.js';
import { mailDomainConformance, orgStoreConformance } from './org-store.conformance.js';

onEveryBackend(orgStoreConformance);
onEveryBackend(mailDomainConformance);
