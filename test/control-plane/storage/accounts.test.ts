import { onEveryBackend } from '../../helpers/storage-backends.js';
import { accountStoresConformance } from './accounts.conformance.js';

onEveryBackend(accountStoresConformance as never);
