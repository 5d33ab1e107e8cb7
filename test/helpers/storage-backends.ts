import t, { type Test } from 'tap';
import { openPostgresStorage } from '../../control-plane/src/storage/postgres/index.js';
import { openSqliteStorage } from '../../control-plane/src/storage/sqlite/index.js';
import type { Storage } from '../../control-plane/src/storage/interface.js';
import { tempDir } from './build.js';
import { createMigratedTestDatabase, postgresAvailability } from './postgres.js';

type Tap = Test;
export type Suite = (t: Tap, open: () => Promise<Storage>) => void;

/**
 * The tier runner (test/tiers/run.mjs) runs the SQLite half in the unit tier and the PostgreSQL
 * half in the integration tier; run directly, a file runs both.
 */
const only = process.env['KEYPLANE_TEST_STORAGE'];
const postgres = only === 'sqlite' ? { run: false, reason: '' } : await postgresAvailability();

/**
 * Runs one conformance suite against every storage backend: embedded SQLite (a fresh data dir
 * per store) and PostgreSQL (a fresh database per store, copied from one already migrated, dropped
 * after).
 */
export function onEveryBackend(suite: Suite): void {
  if (only !== 'postgres')
    t.test('sqlite', async (t) => {
      suite(t, async () => {
        const storage = openSqliteStorage(tempDir(t));
        t.teardown(() => storage.close());
        return storage;
      });
    });
  if (only === 'sqlite') return;
  if (!postgres.run) {
    t.test('postgres', { skip: postgres.reason }, () => undefined);
    return;
  }
  t.test('postgres', async (t) => {
    suite(t, async () => {
      const storage = await openPostgresStorage(await createMigratedTestDatabase(t), { poolSize: 2 });
      // Registered after the drop, so it runs first (teardowns run last-in first-out).
      t.teardown(() => storage.close());
      return storage;
    });
  });
}
