import t from 'tap';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { tempDir } from '../../helpers/build.js';
import { orgStoreConformance } from './org-store.conformance.js';

orgStoreConformance(t, async () => {
  const storage = openSqliteStorage(tempDir(t));
  t.teardown(() => storage.close());
  return storage;
});
