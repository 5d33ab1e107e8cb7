import { onEveryBackend } from '../../helpers/storage-backends.js';
import { secondFactorStoreConformance } from './second-factor.conformance.js';

onEveryBackend(secondFactorStoreConformance as never);
