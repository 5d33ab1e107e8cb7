import t from 'tap';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { tempDir } from '../../helpers/build.js';
import { receiptStoreConformance } from './receipt-store.conformance.js';

receiptStoreConformance(t, async () => {
  const storage = openSqliteStorage(tempDir(t));
  t.teardown(() => storage.close());
  return storage;
});
