import t from 'tap';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { tempDir } from '../../helpers/build.js';
import { agentStoreConformance } from './agent-store.conformance.js';

agentStoreConformance(t, async () => {
  const storage = openSqliteStorage(tempDir(t));
  t.teardown(() => storage.close());
  return storage;
});
