import t from 'tap';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { tempDir } from '../../helpers/build.js';
import { clientStoreConformance } from './client-store.conformance.js';

clientStoreConformance(t, async () => {
  const storage = openSqliteStorage(tempDir(t));
  t.teardown(() => storage.close());
  return storage;
});
