import t from 'tap';
import pg from 'pg';
import { MigrationError } from '../../../control-plane/src/storage/migration-error.js';
import { openPostgresStorage } from '../../../control-plane/src/storage/postgres/index.js';
import { migrations } from '../../../control-plane/src/storage/postgres/migrations.js';
import { collectingSql, spendWith } from '../../../control-plane/src/storage/postgres/sql.js';
import { migrations as sqliteMigrations } from '../../../control-plane/src/storage/sqlite/migrations.js';
import { describeStorage, migrateStorage, openStorage } from '../../../control-plane/src/storage/open-storage.js';
import { tempDir } from '../../helpers/build.js';
import { createTestDatabase, postgresAvailability } from '../../helpers/postgres.js';

const latest = Math.max(...migrations.map((m) => m.version));

t.test('both backends know the same migration versions', async (t) => {
  t.same(migrations.map((m) => m.version).sort(), sqliteMigrations.map((m) => m.version).sort());
});

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
  t.same(await migrateStorage(config), { from: 0, to: latest });
  t.same(await migrateStorage(config), { from: latest, to: latest }, 'nothing twice');
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

  t.test(
    'postgres: migrations run once, recorded in schema_migrations, even when replicas start together',
    async (t) => {
      const url = await createTestDatabase(t);
      // Six at once: CREATE TABLE IF NOT EXISTS races on the catalog unless it waits for the lock.
      const opened = await Promise.all(Array.from({ length: 6 }, () => openPostgresStorage(url, { poolSize: 2 })));
      t.teardown(() => Promise.all(opened.map((storage) => storage.close())));
      const [a] = opened;
      const rows = await admin(url, 'SELECT version FROM schema_migrations ORDER BY version');
      t.same(
        rows.map((r) => r.version),
        migrations.map((m) => m.version).sort((x, y) => x - y),
      );
      t.equal(await a!.ping(), true);
    },
  );

  t.test('postgres: a later migration applies on top; a failing one rolls back', async (t) => {
    const url = await createTestDatabase(t);
    await (await openPostgresStorage(url, { poolSize: 1 })).close();
    const later = [
      ...migrations,
      { version: latest + 1, name: 'later', sql: 'CREATE TABLE test_later (id INTEGER PRIMARY KEY);' },
    ];
    await (await openPostgresStorage(url, { poolSize: 1, migrations: later })).close();
    t.same(await admin(url, "SELECT to_regclass('test_later')::text AS t"), [{ t: 'test_later' }]);
    const broken = [
      ...later,
      { version: latest + 2, name: 'broken', sql: 'CREATE TABLE ok_one (id INTEGER); CREATE TABLE;' },
    ];
    await t.rejects(openPostgresStorage(url, { poolSize: 1, migrations: broken }));
    t.same(
      await admin(url, "SELECT to_regclass('ok_one')::text AS t"),
      [{ t: null }],
      'nothing of the failed migration stays',
    );
    t.same(await admin(url, 'SELECT max(version) AS v FROM schema_migrations'), [{ v: latest + 1 }]);
  });

  t.test('postgres: a database newer than the code is refused', async (t) => {
    const url = await createTestDatabase(t);
    await (await openPostgresStorage(url, { poolSize: 1 })).close();
    await admin(url, `INSERT INTO schema_migrations (version, name) VALUES (${latest + 7}, 'from the future')`);
    await t.rejects(openPostgresStorage(url, { poolSize: 1 }), MigrationError);
    await t.rejects(openPostgresStorage(url, { poolSize: 1 }), /newer than this Keyplane understands/);
    await t.rejects(openPostgresStorage(url, { poolSize: 1, migrate: false }), /newer than this Keyplane understands/);
  });

  t.test('postgres: with migrations at start off, an empty database is refused until `migrate` ran', async (t) => {
    const url = await createTestDatabase(t);
    const config = { dataDir: tempDir(t), databaseUrl: url, database: { migrateOnStart: false, poolSize: 1 } };
    await t.rejects(openStorage(config), /run `keyplane migrate`/);
    t.same(await migrateStorage(config), { from: 0, to: latest });
    t.same(await migrateStorage(config), { from: latest, to: latest });
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
