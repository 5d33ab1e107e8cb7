import t from 'tap';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { tempDir } from '../../helpers/build.js';
import { accountStoresConformance } from './accounts.conformance.js';

accountStoresConformance(t as never, async () => {
  const storage = openSqliteStorage(tempDir(t));
  t.teardown(() => storage.close());
  return storage;
});
