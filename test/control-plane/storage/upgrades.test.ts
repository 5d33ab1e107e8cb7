import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { auditLedger } from '../../../control-plane/src/ledger/audit-ledger.js';
import { loadMigrations } from '../../../control-plane/src/storage/migration-ledger.js';
import { DATABASE_FILE } from '../../../control-plane/src/storage/sqlite/database.js';
import { Database } from '../../../control-plane/src/storage/sqlite/driver.js';
import { listFixtures, unpackSqlite, type Fixture } from '../../fixtures/upgrades/fixtures.js';
import { build, manualClock, tempDir } from '../../helpers/build.js';
import { createTestDatabase, postgresAvailability } from '../../helpers/postgres.js';
import { checkOperatorData, injectHttp } from '../../helpers/upgrade-scenario.js';

// Stores written by earlier releases of Keyplane (test/fixtures/upgrades/README.md), opened by
// this one: everything their users relied on still works, and the ledger still audits.
t.setTimeout(300_000);

const fixtures = listFixtures();
const postgres = await postgresAvailability();
const ids = loadMigrations('sqlite').map((m) => m.id);

async function pgRestoreAvailable(): Promise<string | null> {
  try {
    await promisify(execFile)('pg_restore', ['--version']);
    return null;
  } catch {
    const reason = 'pg_restore (the PostgreSQL client tools) is not installed';
    if (process.env['KEYPLANE_REQUIRE_ALL'] === '1')
      throw new Error(`${reason}, and KEYPLANE_REQUIRE_ALL=1 requires it`);
    return reason;
  }
}
const noPgRestore = postgres.run ? await pgRestoreAvailable() : postgres.reason;

/** Where the fixture's store is put for this release to open, as an operator restores it. */
async function restore(t: Test, fixture: Fixture): Promise<{ dataDir: string; databaseUrl?: string }> {
  const dataDir = tempDir(t);
  if (fixture.backend === 'sqlite') {
    unpackSqlite(fixture, join(dataDir, DATABASE_FILE));
    return { dataDir };
  }
  const databaseUrl = await createTestDatabase(t);
  await promisify(execFile)('pg_restore', [
    '--no-owner',
    '--exit-on-error',
    '--single-transaction',
    `--dbname=${databaseUrl}`,
    join(fixture.dir, fixture.file),
  ]);
  return { dataDir, databaseUrl };
}

async function ledgerOf(store: {
  dataDir: string;
  databaseUrl?: string;
}): Promise<Array<{ id: string; adopted: boolean }>> {
  const sql = 'SELECT id, adopted FROM schema_ledger ORDER BY id';
  if (store.databaseUrl) {
    const client = new pg.Client({ connectionString: store.databaseUrl });
    await client.connect();
    try {
      return (await client.query<{ id: string; adopted: boolean }>(sql)).rows;
    } finally {
      await client.end();
    }
  }
  const db = new Database(join(store.dataDir, DATABASE_FILE), { readonly: true });
  try {
    return (db.prepare(sql).all() as Array<{ id: string; adopted: number }>).map((r) => ({
      ...r,
      adopted: r.adopted === 1,
    }));
  } finally {
    db.close();
  }
}

t.test('there are fixtures from the wave-1 main, from between merges and from a PostgreSQL release', async (t) => {
  const commits = fixtures.map((f) => f.commit.slice(0, 7));
  t.ok(commits.includes('e2164ff'), 'wave-1 main');
  t.ok(commits.includes('ae0f4b8'), 'the orgs merge, whose SQLite store skipped migrations 10 and 20');
  t.ok(
    fixtures.some((f) => f.backend === 'postgres'),
    'a PostgreSQL dump',
  );
});

t.test('every migration is in a fixture: each schema change adds one (README.md beside them)', async (t) => {
  const covered = new Set(fixtures.flatMap((f) => f.migrations));
  for (const migration of loadMigrations('sqlite'))
    t.ok(
      covered.has(migration.id),
      `migration ${migration.id}-${migration.name} is in a fixture`,
      covered.has(migration.id)
        ? {}
        : {
            fix: 'write one with the commit that merged it: npx tsx test/fixtures/upgrades/generate.ts <commit> <date>-<commit>-<what> --postgres',
          },
    );
});

t.test(
  'the store of the orgs merge is the one that skipped 10 and 20: user_version 50, no identities.state',
  async (t) => {
    const fixture = fixtures.find((f) => f.commit.startsWith('ae0f4b8') && f.backend === 'sqlite')!;
    const file = join(tempDir(t), DATABASE_FILE);
    unpackSqlite(fixture, file);
    const db = new Database(file, { readonly: true });
    t.teardown(() => db.close());
    t.equal(db.pragma('user_version', { simple: true }), 50);
    t.same(db.prepare("SELECT name FROM pragma_table_info('identities') WHERE name = 'state'").all(), []);
    t.same(db.prepare("SELECT name FROM sqlite_master WHERE name = 'sessions_by_revoked_at'").all(), []);
  },
);

// Four fixtures at a time: each spends much of its time waiting on pg_restore and PostgreSQL. The
// ledger is audited in-process; `keyplane ledger audit` itself is run by the CLI's tests.
t.test('every fixture upgrades with every check passing', async (t) => {
  t.jobs = 4;
  for (const fixture of fixtures) {
    const skip = fixture.backend === 'postgres' && noPgRestore ? { skip: noPgRestore } : {};
    t.test(
      `${fixture.name} (written by ${fixture.commit.slice(0, 7)}) upgrades with every check passing`,
      skip,
      async (t) => {
        const store = await restore(t, fixture);
        // A release with the migration ledger recorded its migrations itself; an older one left only
        // its own bookkeeping (user_version, schema_migrations), which start-up adopts.
        const ledgerBefore = await ledgerOf(store).catch(() => []);
        // Just after the data was written: its sessions and tokens are as fresh as an upgrade finds them.
        const clock = manualClock(fixture.data.writtenAt + 60_000);
        const { app, services } = await build(t, {
          dataDir: store.dataDir,
          now: clock.now,
          config: {
            masterKey: fixture.masterKey,
            adminToken: fixture.adminToken,
            ...(store.databaseUrl ? { databaseUrl: store.databaseUrl } : {}),
          },
        });
        t.equal(fixture.data.issuer, app.kp.config.issuer, 'the same issuer (passkey origin, token issuer)');
        for (const result of await checkOperatorData(injectHttp(app), fixture.data, clock.now))
          t.ok(result.ok, result.name, result.detail ? { detail: result.detail } : {});

        const ledger = await ledgerOf(store);
        t.same(
          ledger.map((row) => row.id),
          ids,
          'every migration recorded',
        );
        if (ledgerBefore.length === 0)
          t.ok(
            ledger.some((row) => row.adopted),
            'the migrations the release applied were adopted from its bookkeeping',
          );
        else
          // By id, not by place: a release built from a branch lacks migrations merged beside it with
          // earlier ids, which the upgrade applies and lists in id order among the recorded ones.
          t.same(
            ledgerBefore.map((row) => ledger.find((kept) => kept.id === row.id)),
            ledgerBefore,
            'the migrations the release recorded are kept as it recorded them',
          );

        const audit = await auditLedger(services.storage);
        t.equal(audit.failure, undefined, 'the ledger audits');
        t.ok(audit.epochs > 0, `${audit.epochs} epoch(s) intact`);
      },
    );
  }
});
