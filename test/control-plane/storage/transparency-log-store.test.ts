import { onEveryBackend } from '../../helpers/storage-backends.js';
import { transparencyLogStoreConformance } from './transparency-log-store.conformance.js';

onEveryBackend(transparencyLogStoreConformance as never);
