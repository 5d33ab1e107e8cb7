import t from 'tap';
import pg from 'pg';
import { MigrationError } from '../../../control-plane/src/storage/migration-error.js';
import { openPostgresStorage } from '../../../control-plane/src/storage/postgres/index.js';
import { collectingSql, spendWith } from '../../../control-plane/src/storage/postgres/sql.js';
import { defineMigration, loadMigrations } from '../../../control-plane/src/storage/migration-ledger.js';
import { PRE_LEDGER_FENCE } from '../../../control-plane/src/storage/legacy-versions.js';
import { describeStorage, migrateStorage, openStorage } from '../../../control-plane/src/storage/open-storage.js';
import { tempDir } from '../../helpers/build.js';
import { createMigratedTestDatabase, createTestDatabase, postgresAvailability } from '../../helpers/postgres.js';

const migrations = loadMigrations('postgres');
const ids = migrations.map((m) => m.id);
/** The newest migration the code knows, as reports name it. */
const newest = `${migrations.at(-1)!.id}-${migrations.at(-1)!.name}`;
/** Every migration after `id`, as reports name them (the rest of the set at the time of the test). */
const namesAfter = (id: string) => migrations.filter((m) => m.id > id).map((m) => `${m.id}-${m.name}`);
/** What schema_migrations holds for releases before the ledger once the code's set is applied: the legacy versions, then the fence. */
const legacyVersionsAfterAll = [
  ...ids.filter((id) => id.length === 4).map(Number),
  ...(ids.some((id) => id.length !== 4) ? [PRE_LEDGER_FENCE] : []),
];
const later = (id: string, sql: string) => defineMigration(id, `test-${id}`, sql);
const upToDate = { created: false, adopted: [], applied: [], total: ids.length, newest };

t.test('writes go with a spend as guarded CTEs numbered after it; other statements are refused', async (t) => {
  const spend = {
    spent: 'spent AS (UPDATE t SET used = $2 WHERE k = $1 AND used IS NULL RETURNING *)',
    answer: 'SELECT * FROM spent',
  };
  const [text, values] = spendWith(
    spend,
    ['k', 1],
    [
      ['INSERT INTO a (x, y) VALUES ($1, $2)', ['x', 'y']],
      ['UPDATE b SET z = LEAST($2, w) WHERE id = $1 OR id = $3', ['id', 2, 'other']],
    ],
  );
  t.equal(
    text,
    `WITH ${spend.spent},
  w1 AS (INSERT INTO a (x, y) SELECT $3, $4 WHERE EXISTS (SELECT 1 FROM spent)),
  w2 AS (UPDATE b SET z = LEAST($6, w) WHERE EXISTS (SELECT 1 FROM spent) AND (id = $5 OR id = $7))
SELECT * FROM spent`,
  );
  t.same(values, ['k', 1, 'x', 'y', 'id', 2, 'other']);
  for (const refused of [
    'INSERT INTO a (x) VALUES ($1) ON CONFLICT (x) DO NOTHING',
    'INSERT INTO a (x) SELECT $1',
    'DELETE FROM a WHERE x = $1',
    'UPDATE a SET x = $1',
  ])
    t.throws(() => spendWith(spend, [], [[refused, [1]]]), /cannot go with a spend/, refused);
  const collected: Array<[string, unknown[]]> = [];
  const sql = collectingSql(collected);
  t.equal(await sql.atomic((inner) => inner.count('INSERT INTO a (x) VALUES ($1)', [1])), 1);
  t.same(collected, [['INSERT INTO a (x) VALUES ($1)', [1]]]);
  await t.rejects(sql.rows('SELECT 1'), /only writes/);
});

t.test('the factory picks SQLite without a database URL and names it without a password', async (t) => {
  const dataDir = tempDir(t);
  const storage = await openStorage({ dataDir, database: { migrateOnStart: true, poolSize: 2 } });
  t.teardown(() => storage.close());
  t.equal(await storage.ping(), true);
  t.match(describeStorage({ dataDir, database: { migrateOnStart: true, poolSize: 2 } }), /^SQLite .*keyplane\.db$/);
  t.equal(
    describeStorage({
      dataDir,
      databaseUrl: 'postgres://kp:secret@db.internal/keyplane',
      database: { migrateOnStart: true, poolSize: 2 },
    }),
    'PostgreSQL db.internal:5432/keyplane',
  );
});

t.test('SQLite with migrations at start off refuses an outdated schema until `migrate` ran', async (t) => {
  const dataDir = tempDir(t);
  const config = { dataDir, database: { migrateOnStart: false, poolSize: 1 } };
  await t.rejects(openStorage(config), /run `keyplane migrate`/);
  const created = await migrateStorage(config);
  t.equal(created.created, true);
  t.equal(created.applied.length, ids.length);
  t.same(await migrateStorage(config), upToDate, 'nothing twice');
  const storage = await openStorage(config);
  t.equal(await storage.ping(), true);
  await storage.close();
});

const postgres = await postgresAvailability();
if (!postgres.run) t.test('postgres migrations', { skip: postgres.reason }, () => undefined);
else {
  const admin = async (url: string, sql: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(sql)).rows;
    } finally {
      await client.end();
    }
  };

  const ledgerIds = async (url: string) =>
    (await admin(url, 'SELECT id FROM schema_ledger ORDER BY id')).map((r) => r.id as string);
  const preLedgerVersions = async (url: string) =>
    (await admin(url, 'SELECT version FROM schema_migrations ORDER BY version')).map((r) => r.version as number);

  /** A database as a release before the ledger left it: these versions applied and recorded in schema_migrations. */
  async function preLedgerDatabase(url: string, versions: number[]): Promise<void> {
    await admin(
      url,
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
    );
    for (const m of migrations.filter((m) => versions.includes(Number(m.id)))) {
      await admin(url, m.sql);
      await admin(url, `INSERT INTO schema_migrations (version, name) VALUES (${Number(m.id)}, 'as it was named')`);
    }
  }

  t.test('postgres: migrations run once, recorded in the ledger, even when replicas start together', async (t) => {
    const url = await createTestDatabase(t);
    // Six at once: CREATE TABLE races on the catalog unless it waits for the lock.
    const reports: Array<{ applied: string[] }> = [];
    const opened = await Promise.all(
      Array.from({ length: 6 }, () => openPostgresStorage(url, { poolSize: 2, onMigrated: (r) => reports.push(r) })),
    );
    t.teardown(() => Promise.all(opened.map((storage) => storage.close())));
    t.same(await ledgerIds(url), ids);
    t.equal(
      reports.reduce((n, r) => n + r.applied.length, 0),
      ids.length,
      'each migration applied by one replica',
    );
    const [row] = await admin(url, "SELECT checksum, adopted, applied_at FROM schema_ledger WHERE id = '0001'");
    t.equal(row.checksum, migrations[0]!.checksum);
    t.equal(row.adopted, false);
    t.ok(row.applied_at instanceof Date);
    t.same(
      await preLedgerVersions(url),
      legacyVersionsAfterAll,
      'releases before the ledger see every version they know in schema_migrations',
    );
    t.equal(await opened[0]!.ping(), true);
  });

  t.test(
    'postgres: a later migration applies on top, fencing releases before the ledger out; a failing one rolls back',
    async (t) => {
      const url = await createTestDatabase(t);
      await (await openPostgresStorage(url, { poolSize: 1 })).close();
      const withLater = [...migrations, later('99990101000000', 'CREATE TABLE test_later (id INTEGER PRIMARY KEY);')];
      await (await openPostgresStorage(url, { poolSize: 1, migrations: withLater })).close();
      t.same(await admin(url, "SELECT to_regclass('test_later')::text AS t"), [{ t: 'test_later' }]);
      t.same(await admin(url, 'SELECT max(version) AS v FROM schema_migrations'), [{ v: PRE_LEDGER_FENCE }]);
      const broken = [...withLater, later('20261126130000', 'CREATE TABLE ok_one (id INTEGER); CREATE TABLE;')];
      await t.rejects(openPostgresStorage(url, { poolSize: 1, migrations: broken }));
      t.same(
        await admin(url, "SELECT to_regclass('ok_one')::text AS t"),
        [{ t: null }],
        'nothing of the failed migration stays',
      );
      t.same((await ledgerIds(url)).at(-1), '99990101000000');
    },
  );

  t.test('postgres: a database migrated by a newer release is refused, naming both versions', async (t) => {
    const url = await createTestDatabase(t);
    const newer = [...migrations, later('99991231000000', 'CREATE TABLE from_the_future (id INTEGER);')];
    await (await openPostgresStorage(url, { poolSize: 1, migrations: newer })).close();
    for (const migrate of [true, false]) {
      const error = await openPostgresStorage(url, { poolSize: 1, migrate }).then(
        () => null,
        (e: Error) => e,
      );
      t.type(error, MigrationError);
      t.match(error!.message, /newer Keyplane: it has migration 99991231000000-test-99991231000000/);
      t.match(error!.message, new RegExp(`its newest is ${newest}`));
    }
  });

  t.test(
    'postgres: a pre-ledger database with a version this release does not know is refused and left as it was',
    async (t) => {
      const url = await createTestDatabase(t);
      await preLedgerDatabase(url, [1, 2]);
      await admin(url, "INSERT INTO schema_migrations (version, name) VALUES (95, 'from a newer branch')");
      await t.rejects(
        openPostgresStorage(url, { poolSize: 1 }),
        /it has migration 0095-from a newer branch, which this release does not know/,
      );
      t.same(await admin(url, "SELECT to_regclass('schema_ledger')::text AS t"), [{ t: null }], 'no ledger was left');
    },
  );

  t.test('postgres: a recorded migration whose file changed stops the start', async (t) => {
    const url = await createMigratedTestDatabase(t);
    const edited = migrations.map((m) => (m.id === '0030' ? defineMigration(m.id, m.name, `${m.sql}-- edited\n`) : m));
    for (const migrate of [true, false])
      await t.rejects(
        openPostgresStorage(url, { poolSize: 1, migrate, migrations: edited }),
        /migration 0030-agent-identity differs from the one this database recorded/,
      );
  });

  t.test('postgres: a database from before the ledger is adopted from schema_migrations and completed', async (t) => {
    const url = await createTestDatabase(t);
    // The first PostgreSQL release (the pg merge, 7e7b373) knew 1 to 50.
    const before = [1, 2, 3, 4, 5, 6, 7, 10, 15, 16, 20, 30, 50];
    await preLedgerDatabase(url, before);
    let report: { adopted: string[]; applied: string[]; created: boolean } | undefined;
    await (await openPostgresStorage(url, { poolSize: 1, onMigrated: (r) => (report = r) })).close();
    t.equal(report!.created, false);
    t.same(
      report!.adopted.map((a) => Number(a.slice(0, 4))),
      before,
    );
    t.same(report!.applied, namesAfter('0050'));
    t.same(await ledgerIds(url), ids);
    t.same(
      await admin(
        url,
        "SELECT count(*)::int AS n FROM schema_ledger WHERE adopted AND name = 'organizations-sites-scans'",
      ),
      [{ n: 1 }],
      'adopted rows carry the names and checksums of the files',
    );
    t.same(await preLedgerVersions(url), legacyVersionsAfterAll);
  });

  t.test('postgres: with migrations at start off, the whole set is compared, not the highest version', async (t) => {
    const url = await createTestDatabase(t);
    await t.rejects(
      openPostgresStorage(url, { poolSize: 1, migrate: false }),
      /has no schema yet; run `keyplane migrate`/,
    );
    await (
      await openPostgresStorage(url, { poolSize: 1, migrations: migrations.filter((m) => m.id !== '0010') })
    ).close();
    await t.rejects(
      openPostgresStorage(url, { poolSize: 1, migrate: false }),
      /lacks 1 migration\(s\) this release needs \(0010-sessions-by-revocation-time\); run `keyplane migrate`/,
    );
    await (await openPostgresStorage(url, { poolSize: 1 })).close();
    await (await openPostgresStorage(url, { poolSize: 1, migrate: false })).close();

    const preLedger = await createTestDatabase(t);
    await preLedgerDatabase(preLedger, [1, 2]);
    await t.rejects(
      openPostgresStorage(preLedger, { poolSize: 1, migrate: false }),
      /release without the migration ledger; run `keyplane migrate`/,
    );
  });

  t.test('postgres: with migrations at start off, `keyplane migrate` readies an empty database', async (t) => {
    const url = await createTestDatabase(t);
    const config = { dataDir: tempDir(t), databaseUrl: url, database: { migrateOnStart: false, poolSize: 1 } };
    await t.rejects(openStorage(config), /run `keyplane migrate`/);
    const created = await migrateStorage(config);
    t.equal(created.created, true);
    t.equal(created.applied.length, ids.length);
    t.same(await migrateStorage(config), upToDate);
    const storage = await openStorage(config);
    t.teardown(() => storage.close());
    t.equal(await storage.ping(), true);
  });

  t.test('postgres: ping answers false once the server is gone', async (t) => {
    const url = await createTestDatabase(t);
    const storage = await openPostgresStorage(url, { poolSize: 1 });
    t.equal(await storage.ping(), true);
    await storage.close();
    t.equal(await storage.ping(), false);
  });
}
