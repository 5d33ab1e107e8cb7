import { onEveryBackend } from '../../helpers/storage-backends.js';
import { teamStoreConformance } from './team-store.conformance.js';

onEveryBackend(teamStoreConformance);
