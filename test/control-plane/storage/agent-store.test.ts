import { onEveryBackend } from '../../helpers/storage-backends.js';
import { agentStoreConformance } from './agent-store.conformance.js';

onEveryBackend(agentStoreConformance);
