import t from 'tap';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { tempDir } from '../helpers/build.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { createTestDatabase, postgresAvailability } from '../helpers/postgres.js';

// The offline commands on a store that is not there: nothing may be created, and the exit is 2.
const env = { KEYPLANE_MASTER_KEY: 'k'.repeat(40) };
const readers = (out: string) => [
  ['ledger', 'audit'],
  ['keys', 'list'],
  ['keys', 'rotate'],
  ['backup', '--out', out],
];

t.test('ledger audit, keys and backup refuse a data directory that does not exist, and create nothing', async (t) => {
  const parent = tempDir(t);
  const missing = join(parent, 'typo');
  for (const args of readers(join(tempDir(t), 'backup.db'))) {
    const run = await runInProcess([...args, '--data', missing], env);
    t.equal(run.code, 2, args.join(' '));
    t.match(run.stderr, new RegExp(`the data directory ${missing} does not exist: check --data`), args.join(' '));
    t.equal(run.stdout, '', 'no verdict is printed');
  }
  t.same(readdirSync(parent), [], 'no directory was made');
});

t.test('… and one that holds no database, or a file that is not one', async (t) => {
  const empty = tempDir(t);
  for (const args of readers(join(tempDir(t), 'backup.db'))) {
    const run = await runInProcess([...args, '--data', empty], env);
    t.equal(run.code, 2, args.join(' '));
    t.match(run.stderr, /there is no Keyplane database in .* \(no keyplane\.db\)/);
  }
  t.same(readdirSync(empty), [], 'neither a database nor a dev master key was written');

  const zero = tempDir(t);
  writeFileSync(join(zero, 'keyplane.db'), '');
  const audit = await runInProcess(['ledger', 'audit', '--data', zero], env);
  t.equal(audit.code, 2);
  t.match(audit.stderr, /keyplane\.db holds no Keyplane schema/);
  const garbage = tempDir(t);
  writeFileSync(join(garbage, 'keyplane.db'), 'not a database, just text '.repeat(200));
  const keys = await runInProcess(['keys', 'list', '--data', garbage], env);
  t.equal(keys.code, 2);
  t.match(keys.stderr, /cannot be read as a SQLite database/);
});

t.test('migrate creates a new store and says so in one line; then reports it up to date', async (t) => {
  const data = join(tempDir(t), 'new');
  const created = await runInProcess(['migrate', '--data', data]);
  t.equal(created.code, 0, created.stderr);
  t.match(
    created.stdout,
    new RegExp(
      `^created a new database at SQLite ${data}/keyplane\\.db \\(\\d+ migration\\(s\\), newest \\d+-[a-z-]+\\)\\n$`,
    ),
  );
  const again = await runInProcess(['migrate', '--data', data]);
  t.match(again.stdout, /^SQLite .* is up to date \(\d+ migration\(s\), newest .*\); nothing to apply\n$/);
  const audit = await runInProcess(['ledger', 'audit', '--data', data], env);
  t.equal(audit.code, 0, audit.stderr);
  t.match(audit.stdout, /^ledger intact: 0 epoch\(s\)/);
});

t.test(
  'a store migrated by a newer release, or with a changed migration, stops migrate and the commands (exit 2)',
  async (t) => {
    const { Database } = await import('../../control-plane/src/storage/sqlite/driver.js');
    const data = tempDir(t);
    t.equal((await runInProcess(['migrate', '--data', data])).code, 0);
    const db = new Database(join(data, 'keyplane.db'));
    db.prepare(
      "INSERT INTO schema_ledger VALUES ('20991231235959', 'from-a-newer-release', 'x', '2099-12-31T23:59:59Z', 0)",
    ).run();
    db.close();
    for (const args of [['migrate'], ['ledger', 'audit'], ['keys', 'list']]) {
      const run = await runInProcess([...args, '--data', data], env);
      t.equal(run.code, 2, args.join(' '));
      t.match(run.stderr, /migrated by a newer Keyplane: it has migration 20991231235959-from-a-newer-release/);
    }
    const fixed = new Database(join(data, 'keyplane.db'));
    fixed.prepare("DELETE FROM schema_ledger WHERE id = '20991231235959'").run();
    fixed.prepare("UPDATE schema_ledger SET checksum = 'edited' WHERE id = '0005'").run();
    fixed.close();
    const changed = await runInProcess(['migrate', '--data', data]);
    t.equal(changed.code, 2);
    t.match(changed.stderr, /migration 0005-oidc-clients differs from the one this database recorded/);
  },
);

const postgres = await postgresAvailability();
if (!postgres.run) t.test('the store commands on PostgreSQL', { skip: postgres.reason }, () => undefined);
else {
  t.test('on PostgreSQL: a database without the schema is refused and left empty; migrate creates it', async (t) => {
    const url = await createTestDatabase(t);
    for (const args of readers(join(tempDir(t), 'backup.dump'))) {
      const run = await runInProcess([...args, '--database', url], env);
      t.equal(run.code, 2, args.join(' '));
      t.match(run.stderr, /PostgreSQL 127\.0\.0\.1:5432\/kp_test_\w+ holds no Keyplane schema: check --database/);
    }
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const tables = await client.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
    await client.end();
    t.same(tables.rows, [{ n: 0 }], 'no table was created');
    const created = await runInProcess(['migrate', '--database', url], env);
    t.match(created.stdout, /^created a new database at PostgreSQL /);
  });

  t.test('an unreachable --database exits 2 for every store command', async (t) => {
    // Port 1 on loopback refuses at once; the second names a database the server does not have.
    const refused = 'postgres://postgres@127.0.0.1:1/keyplane';
    const noSuchDatabase = new URL(await createTestDatabase(t));
    noSuchDatabase.pathname = '/kp_test_does_not_exist';
    for (const url of [refused, noSuchDatabase.toString()]) {
      for (const args of [['migrate'], ...readers(join(tempDir(t), 'x.dump'))]) {
        const run = await runInProcess([...args, '--database', url], env);
        t.equal(run.code, 2, `${args.join(' ')} on ${url}`);
        t.match(run.stderr, /^keyplane: cannot reach PostgreSQL 127\.0\.0\.1:\d+\/\w+: /m);
      }
    }
  });
}
