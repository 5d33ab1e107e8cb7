import { onEveryBackend } from '../../helpers/storage-backends.js';
import { operatorStoreConformance } from './operator-store.conformance.js';

onEveryBackend(operatorStoreConformance);
