import type { Storage, Stores } from '../types.js';
import { openDatabase } from './database.js';
import { sqliteKeyStore } from './key-store.js';
import { SerialRunner, type Runner } from './serial-runner.js';

function storesOn(runner: Runner): Stores {
  return { keys: sqliteKeyStore(runner) };
}

export function openSqliteStorage(dataDir: string): Storage {
  const db = openDatabase(dataDir);
  const runner = new SerialRunner(db);
  return {
    ...storesOn(runner),
    transaction: (work) => runner.transaction((direct) => work(storesOn(direct))),
    ping: () => runner.run((d) => d.prepare('SELECT 1 AS ok').get() !== undefined),
    close: async () => {
      db.close();
    },
  };
}
