import t from 'tap';
import { Database, driverPackage, loadDriver } from '../../../control-plane/src/storage/sqlite/driver.js';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  DATABASE_FILE,
  MigrationError,
  WAL_CHECKPOINT_PAGES,
  WAL_SIZE_LIMIT,
  backupDatabase,
  migrate,
  openDatabase,
} from '../../../control-plane/src/storage/sqlite/database.js';
import { migrations } from '../../../control-plane/src/storage/sqlite/migrations.js';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { tempDir } from '../../helpers/build.js';

t.test('Node-API 10 runtimes load better-sqlite3 13, older ones the Node 20 build', async (t) => {
  t.equal(driverPackage(10), 'better-sqlite3');
  t.equal(driverPackage(9), 'better-sqlite3-node20');
});

t.test('a missing Node 20 build is reported with what to do; other load failures pass through', async (t) => {
  const missing = () => {
    throw Object.assign(new Error('Cannot find module'), { code: 'MODULE_NOT_FOUND' });
  };
  t.throws(
    () => loadDriver('better-sqlite3-node20', missing),
    /needs the optional dependency better-sqlite3-node20.*Node\.js 22\.14 or later/,
  );
  t.throws(() => loadDriver('better-sqlite3', missing), /Cannot find module/);
  const broken = () => {
    throw new Error('invalid ELF header');
  };
  t.throws(() => loadDriver('better-sqlite3-node20', broken), /invalid ELF header/);
  t.equal(
    loadDriver('better-sqlite3', () => Database),
    Database,
  );
});

t.test('statements freed by the garbage collector do not abort the process', { timeout: 60_000 }, async (t) => {
  // On Node 24.19 and later, better-sqlite3 12 aborted here (docs/platform.md#nodejs-versions).
  const fixture = join(import.meta.dirname, 'fixtures', 'collect-statements.mjs');
  // Not instrumented for coverage: the child only exercises the driver package.
  const env = { ...process.env, _TAPJS_PROCESSINFO_COV_EXCLUDE_: '/./' };
  const { stdout } = await promisify(execFile)(process.execPath, [fixture, driverPackage()], { env });
  t.equal(stdout.trim(), `sum ${300 * 19_900}`);
});

const latest = Math.max(...migrations.map((m) => m.version));

t.test('migrations run in order at start, once, in WAL mode', async (t) => {
  const dir = tempDir(t);
  const db = openDatabase(dir);
  t.equal(db.pragma('user_version', { simple: true }), latest);
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  t.equal(db.pragma('wal_autocheckpoint', { simple: true }), WAL_CHECKPOINT_PAGES, 'checkpoints are spaced out');
  t.equal(db.pragma('journal_size_limit', { simple: true }), WAL_SIZE_LIMIT, 'the WAL file is cut back after one');
  db.close();
  const again = openDatabase(dir);
  t.equal(again.pragma('user_version', { simple: true }), latest, 'reopening applies nothing twice');
  again.close();
});

t.test('a later migration applies on top of an older database', async (t) => {
  const db = new Database(':memory:');
  migrate(db, migrations.slice(0, 1));
  t.equal(db.pragma('user_version', { simple: true }), 1);
  const extra = [
    ...migrations,
    { version: latest + 1, name: 'test column', sql: 'CREATE TABLE test_later (id INTEGER PRIMARY KEY);' },
  ];
  migrate(db, extra);
  t.equal(db.pragma('user_version', { simple: true }), latest + 1);
  t.ok(db.prepare("SELECT name FROM sqlite_master WHERE name = 'test_later'").get());
  db.close();
});

t.test('a failing migration rolls back and leaves the version', async (t) => {
  const db = new Database(':memory:');
  migrate(db, migrations);
  t.throws(() =>
    migrate(db, [
      ...migrations,
      { version: latest + 1, name: 'broken', sql: 'CREATE TABLE ok_one (id INTEGER); CREATE TABLE;' },
    ]),
  );
  t.equal(db.pragma('user_version', { simple: true }), latest);
  t.notOk(db.prepare("SELECT name FROM sqlite_master WHERE name = 'ok_one'").get());
  db.close();
});

t.test('a database newer than the code is refused', async (t) => {
  const dir = tempDir(t);
  const db = new Database(join(dir, DATABASE_FILE));
  db.pragma(`user_version = ${latest + 7}`);
  db.close();
  t.throws(() => openDatabase(dir), MigrationError);
  t.throws(() => openDatabase(dir), /newer than this Keyplane understands/);
});

t.test('online backup restores into a working store', async (t) => {
  const dir = tempDir(t);
  const storage = openSqliteStorage(dir);
  await storage.keys.insert({
    kid: 'k1',
    alg: 'ES256',
    state: 'current',
    publicJwk: { kty: 'EC' },
    sealedPrivateJwk: Buffer.from('sealed'),
    createdAt: 1,
    activatedAt: 1,
    retiredAt: null,
  });
  const out = join(tempDir(t), 'backup.db');
  const { pages } = await backupDatabase(dir, out);
  t.ok(pages > 0);
  await storage.keys.insert({
    kid: 'k2',
    alg: 'ES256',
    state: 'next',
    publicJwk: { kty: 'EC' },
    sealedPrivateJwk: Buffer.from('x'),
    createdAt: 2,
    activatedAt: null,
    retiredAt: null,
  });
  await storage.close();

  const restoredDir = tempDir(t);
  const { copyFileSync } = await import('node:fs');
  copyFileSync(out, join(restoredDir, DATABASE_FILE));
  const restored = openSqliteStorage(restoredDir);
  t.teardown(() => restored.close());
  t.same(
    (await restored.keys.list()).map((k) => k.kid),
    ['k1'],
    'the backup holds what existed when it was taken',
  );
  t.equal(await restored.ping(), true);
});

t.test('transactions queued together share a commit; a failing one is undone alone', async (t) => {
  const dir = tempDir(t);
  const storage = openSqliteStorage(dir);
  t.teardown(() => storage.close());
  const receipt = (n: number) => ({ kind: 'test.event', at: '2026-11-23T12:00:00Z', outcome: 'success', n });
  const hash = (n: number) => n.toString(16).padStart(64, '0');
  // Started in one tick: they queue behind the first and run in one group.
  const results = await Promise.allSettled(
    [1, 2, 3, 4].map((n) =>
      storage.transaction(async (tx) => {
        await tx.receipts.append(receipt(n), hash(n), 1000);
        if (n === 3) throw new Error('refused');
        return n;
      }),
    ),
  );
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
  );
  t.same(
    results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
    [1, 2, 'refused', 4],
  );
  t.ok(await storage.receipts.get(hash(1)));
  t.equal(await storage.receipts.get(hash(3)), undefined, 'the failed transaction left nothing');
  t.equal(await storage.receipts.pendingCount(), 3);
  // Durable once resolved: a second connection sees every committed row.
  const other = openSqliteStorage(dir);
  t.teardown(() => other.close());
  t.ok(await other.receipts.get(hash(4)), 'committed before the caller heard of it');
  // A duplicate key (a statement error) inside a group fails that transaction only.
  const again = await Promise.allSettled(
    [5, 1, 6].map((n) => storage.transaction((tx) => tx.receipts.append(receipt(n), hash(n), 2000))),
  );
  t.same(
    again.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.equal(await storage.receipts.pendingCount(), 5);
});
