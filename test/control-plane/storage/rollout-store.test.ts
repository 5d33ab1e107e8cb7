import { onEveryBackend } from '../../helpers/storage-backends.js';
import { rolloutStoreConformance } from './rollout-store.conformance.js';

onEveryBackend(rolloutStoreConformance as never);
