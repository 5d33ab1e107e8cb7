import { onEveryBackend } from '../../helpers/storage-backends.js';
import { receiptStoreConformance } from './receipt-store.conformance.js';

onEveryBackend(receiptStoreConformance as never);
