import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/build.js';
import { runCli } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { docCommand } from '../helpers/doc-examples.js';
import { createTestDatabase, postgresAvailability } from '../helpers/postgres.js';

const env = { KEYPLANE_MASTER_KEY: 'k'.repeat(40) };
const postgres = await postgresAvailability();

if (!postgres.run) t.test('the CLI on PostgreSQL', { skip: postgres.reason }, () => undefined);
else {
  t.test('migrate, keys, ledger audit and backup work on PostgreSQL through --database', async (t) => {
    const url = await createTestDatabase(t);
    // docs/operations.md's commands as written, with this throwaway database as $KEYPLANE_DATABASE_URL.
    const database = { $KEYPLANE_DATABASE_URL: url };
    const migrated = await runCli(
      docCommand('docs/operations.md', 'keyplane migrate --database "$KEYPLANE_DATABASE_URL"', database).args,
      env,
    );
    t.equal(migrated.code, 0, migrated.stderr);
    t.match(
      migrated.stdout,
      /^created a new database at PostgreSQL 127\.0\.0\.1:5432\/kp_test_\w+ \(\d+ migration\(s\), newest \d+-[a-z-]+\)\n$/,
    );
    t.match(migrated.stderr, /migrating PostgreSQL 127\.0\.0\.1:5432\/kp_test_/);
    t.match((await runInProcess(['migrate', '--database', url], env)).stdout, /nothing to apply/);

    const listed = await runInProcess(['keys', 'list'], { ...env, KEYPLANE_DATABASE_URL: url });
    t.equal(listed.code, 0, listed.stderr);
    t.match(listed.stdout, /current/);
    const audit = await runInProcess(['ledger', 'audit', '--database', url], env);
    t.equal(audit.code, 0, audit.stderr);
    t.match(audit.stdout, /^ledger intact: 0 epoch\(s\)/);

    const stamp = new Date().toISOString().replace(/[-:]|\.\d+/g, '');
    const backups = tempDir(t);
    const out = join(backups, `keyplane-${stamp}.dump`);
    const backup = await runCli(
      docCommand(
        'docs/operations.md',
        'keyplane backup --database "$KEYPLANE_DATABASE_URL" --out /backups/keyplane-$(date -u +%Y%m%dT%H%M%SZ).dump',
        { ...database, '/backups': backups, '$(date -u +%Y%m%dT%H%M%SZ)': stamp },
      ).args,
      env,
    );
    t.equal(backup.code, 0, backup.stderr);
    t.ok(existsSync(out), 'pg_dump wrote the file');
    t.match(backup.stdout, /pg_restore/);

    const missing = await runInProcess(['backup', '--database', url, '--out', join(tempDir(t), 'x.dump')], {
      ...env,
      PATH: tempDir(t),
    });
    t.equal(missing.code, 1);
    t.match(missing.stderr, /pg_dump is not installed/);
  });

  t.test('a database URL that is not postgres:// is a configuration error', async (t) => {
    const bad = await runInProcess(['migrate', '--database', 'mysql://x/y'], env);
    t.equal(bad.code, 2);
    t.match(bad.stderr, /databaseUrl/);
  });
}
