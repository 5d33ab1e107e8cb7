import { onEveryBackend } from '../../helpers/storage-backends.js';
import { gatewayStoreConformance } from './gateway-store.conformance.js';

onEveryBackend(gatewayStoreConformance as never);
