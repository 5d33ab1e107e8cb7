import t from 'tap';
import { Database, driverPackage, loadDriver } from '../../../control-plane/src/storage/sqlite/driver.js';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  DATABASE_FILE,
  MigrationError,
  WAL_CHECKPOINT_PAGES,
  WAL_SIZE_LIMIT,
  backupDatabase,
  openDatabase,
} from '../../../control-plane/src/storage/sqlite/database.js';
import { migrateSqlite } from '../../../control-plane/src/storage/sqlite/schema-ledger.js';
import {
  defineMigration,
  loadMigrations,
  type MigrationReport,
} from '../../../control-plane/src/storage/migration-ledger.js';
import { PRE_LEDGER_FENCE } from '../../../control-plane/src/storage/legacy-versions.js';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { tempDir } from '../../helpers/build.js';
import { childEnv } from '../../helpers/cli.js';

t.test('Node-API 10 runtimes load better-sqlite3 13, older ones the Node 20 build', async (t) => {
  t.equal(driverPackage(10), 'better-sqlite3');
  t.equal(driverPackage(9), 'better-sqlite3-node20');
});

t.test('a missing driver is reported with what to do; other load failures pass through', async (t) => {
  const missing = () => {
    throw Object.assign(new Error('Cannot find module'), { code: 'MODULE_NOT_FOUND' });
  };
  t.throws(
    () => loadDriver('better-sqlite3-node20', missing),
    /needs the optional dependency better-sqlite3-node20.*Node\.js 22\.14 or later/,
  );
  t.throws(
    () => loadDriver('better-sqlite3', missing),
    /needs the optional dependency better-sqlite3 13.*run npm ci again with this one/,
    'packages installed by Node.js 20, run by a newer one',
  );
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
  const env = childEnv();
  const { stdout } = await promisify(execFile)(process.execPath, [fixture, driverPackage()], { env });
  t.equal(stdout.trim(), `sum ${300 * 19_900}`);
});

const migrations = loadMigrations('sqlite');
const ids = migrations.map((m) => m.id);
/** The newest migration the code knows, as reports name it. */
const newest = `${migrations.at(-1)!.id}-${migrations.at(-1)!.name}`;
/** Every migration after `id`, as reports name them (the rest of the set at the time of the test). */
const namesAfter = (id: string) => migrations.filter((m) => m.id > id).map((m) => `${m.id}-${m.name}`);
/** What releases before the ledger read in user_version / schema_migrations once the code's set is applied. */
const legacyVersionAfterAll = migrations.every((m) => m.id.length === 4) ? 90 : PRE_LEDGER_FENCE;
const ledgerIds = (db: Database) =>
  (db.prepare('SELECT id FROM schema_ledger ORDER BY id').all() as Array<{ id: string }>).map((r) => r.id);
const later = (id: string, sql: string) => defineMigration(id, `test-${id}`, sql);

/** A data directory as a release before the ledger left it: these legacy versions applied, user_version as it recorded. */
function preLedgerDatabase(dir: string, versions: number[], userVersion: number): void {
  const db = new Database(join(dir, DATABASE_FILE));
  for (const m of migrations) if (versions.includes(Number(m.id))) db.exec(m.sql);
  db.pragma(`user_version = ${userVersion}`);
  db.close();
}

t.test('migrations run in id order at start, once, recorded in the ledger, in WAL mode', async (t) => {
  const dir = tempDir(t);
  const reports: MigrationReport[] = [];
  const db = openDatabase(dir, undefined, { onMigrated: (r) => reports.push(r) });
  t.same(ledgerIds(db), ids);
  t.equal(reports[0]!.created, true);
  t.same(
    reports[0]!.applied,
    migrations.map((m) => `${m.id}-${m.name}`),
  );
  const row = db.prepare("SELECT checksum, adopted, applied_at FROM schema_ledger WHERE id = '0001'").get() as {
    checksum: string;
    adopted: number;
    applied_at: string;
  };
  t.equal(row.checksum, migrations[0]!.checksum);
  t.equal(row.adopted, 0);
  t.match(row.applied_at, /^\d{4}-\d\d-\d\dT/);
  t.equal(
    db.pragma('user_version', { simple: true }),
    legacyVersionAfterAll,
    'releases before the ledger read it as their newest, or are fenced out past it',
  );
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  t.equal(db.pragma('wal_autocheckpoint', { simple: true }), WAL_CHECKPOINT_PAGES, 'checkpoints are spaced out');
  t.equal(db.pragma('journal_size_limit', { simple: true }), WAL_SIZE_LIMIT, 'the WAL file is cut back after one');
  db.close();
  const again = openDatabase(dir, undefined, { onMigrated: (r) => reports.push(r) });
  t.same(reports[1], { created: false, adopted: [], applied: [], total: ids.length, newest });
  again.close();
});

t.test(
  'a later migration applies on top; past the legacy ones, releases before the ledger are fenced out',
  async (t) => {
    const db = new Database(':memory:');
    migrateSqlite(db, migrations.slice(0, 1));
    t.same(ledgerIds(db), ['0001']);
    t.equal(db.pragma('user_version', { simple: true }), 1);
    const report = migrateSqlite(db, [
      ...migrations,
      later('99990101000000', 'CREATE TABLE test_later (id INTEGER PRIMARY KEY);'),
    ]);
    t.same(report.applied.at(-1), '99990101000000-test-99990101000000');
    t.equal(report.newest, '99990101000000-test-99990101000000');
    t.ok(db.prepare("SELECT name FROM sqlite_master WHERE name = 'test_later'").get());
    t.equal(db.pragma('user_version', { simple: true }), PRE_LEDGER_FENCE, 'a release before the ledger refuses it');
    db.close();
  },
);

t.test('a failing migration rolls back and is not recorded', async (t) => {
  const db = new Database(':memory:');
  migrateSqlite(db, migrations);
  t.throws(() =>
    migrateSqlite(db, [...migrations, later('99990101000000', 'CREATE TABLE ok_one (id INTEGER); CREATE TABLE;')]),
  );
  t.same(ledgerIds(db), ids);
  t.notOk(db.prepare("SELECT name FROM sqlite_master WHERE name = 'ok_one'").get());
  db.close();
});

t.test('a database migrated by a newer release is refused, naming both versions', async (t) => {
  const dir = tempDir(t);
  const newer = [...migrations, later('99991231000000', 'CREATE TABLE from_the_future (id INTEGER);')];
  openDatabase(dir, newer).close();
  for (const migrate of [true, false]) {
    const error = t.throws(() => openDatabase(dir, undefined, { migrate }), MigrationError) as Error;
    t.match(error.message, /migrated by a newer Keyplane: it has migration 99991231000000-test-99991231000000/);
    t.match(error.message, new RegExp(`its newest is ${newest}`));
  }
});

t.test('a pre-ledger database with a user_version past every legacy migration is refused', async (t) => {
  const dir = tempDir(t);
  preLedgerDatabase(dir, [1], 97);
  t.throws(
    () => openDatabase(dir),
    /schema version 97 without a migration ledger, newer than this Keyplane understands/,
  );
  const db = new Database(join(dir, DATABASE_FILE));
  t.same(db.prepare("SELECT name FROM sqlite_master WHERE name = 'schema_ledger'").all(), [], 'no ledger was left');
  db.close();
});

t.test('a recorded migration whose file changed stops the start, before anything runs', async (t) => {
  const dir = tempDir(t);
  openDatabase(dir, migrations.slice(0, 3)).close();
  const edited = migrations.map((m) => (m.id === '0002' ? defineMigration(m.id, m.name, `${m.sql}-- edited\n`) : m));
  for (const migrate of [true, false]) {
    const error = t.throws(() => openDatabase(dir, edited, { migrate }), MigrationError) as Error;
    t.match(error.message, /migration 0002-receipt-ledger differs from the one this database recorded/);
  }
  const db = new Database(join(dir, DATABASE_FILE));
  t.same(ledgerIds(db), ['0001', '0002', '0003'], 'nothing else was applied');
  db.close();
});

t.test(
  'a pre-ledger store that skipped lower versions (50 ahead of 10 and 20) gets them at the next start',
  async (t) => {
    // What main at the orgs merge (ae0f4b8) wrote: 1-7, 15, 16, 30 and 50, user_version 50. Main
    // later merged 10 and 20, which user_version alone skipped (every passkey sign-in answered 500).
    const dir = tempDir(t);
    const before = [1, 2, 3, 4, 5, 6, 7, 15, 16, 30, 50];
    preLedgerDatabase(dir, before, 50);
    let report: MigrationReport | undefined;
    const db = openDatabase(dir, undefined, { onMigrated: (r) => (report = r) });
    t.same(
      report!.adopted.map((a) => Number(a.slice(0, 4))),
      before,
      'the ledger records what the store really has',
    );
    t.same(report!.applied, ['0010-sessions-by-revocation-time', '0020-account-state', ...namesAfter('0050')]);
    t.ok(
      db.prepare("SELECT 1 FROM pragma_table_info('identities') WHERE name = 'state'").get(),
      'identities.state exists',
    );
    t.same(db.prepare('SELECT count(*) AS n FROM schema_ledger WHERE adopted = 1').get(), { n: before.length });
    t.equal(db.pragma('user_version', { simple: true }), legacyVersionAfterAll);
    db.close();
  },
);

t.test('with migrations at start off, the whole set is compared, not the highest version', async (t) => {
  const dir = tempDir(t);
  const off = { migrate: false };
  t.throws(() => openDatabase(dir, undefined, off), /no database at .*keyplane\.db; run `keyplane migrate`/);
  t.equal(existsSync(join(dir, DATABASE_FILE)), false, 'nothing was created');
  // A ledger holding the newest migration but not a lower one: the highest matches, the set does not.
  openDatabase(
    dir,
    migrations.filter((m) => m.id !== '0020'),
  ).close();
  t.throws(
    () => openDatabase(dir, undefined, off),
    /lacks 1 migration\(s\) this release needs \(0020-account-state\); run `keyplane migrate`/,
  );
  openDatabase(dir).close();
  openDatabase(dir, undefined, off).close();

  const preLedger = tempDir(t);
  preLedgerDatabase(preLedger, [1, 2, 3], 3);
  t.throws(
    () => openDatabase(preLedger, undefined, off),
    /release without the migration ledger; run `keyplane migrate`/,
  );
  const empty = tempDir(t);
  new Database(join(empty, DATABASE_FILE)).close();
  t.throws(() => openDatabase(empty, undefined, off), /has no schema yet; run `keyplane migrate`/);
});

t.test('two processes starting on one new store apply each migration once', async (t) => {
  const dir = tempDir(t);
  const first = new Database(join(dir, DATABASE_FILE));
  const second = new Database(join(dir, DATABASE_FILE));
  first.pragma('busy_timeout = 5000');
  second.pragma('busy_timeout = 5000');
  const a = migrateSqlite(first, migrations);
  const b = migrateSqlite(second, migrations);
  t.equal(a.applied.length + b.applied.length, ids.length);
  t.same(ledgerIds(first), ids);
  first.close();
  second.close();
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
