import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build, manualClock, tempDir } from '../helpers/build.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { createTestDatabase, postgresAvailability } from '../helpers/postgres.js';
import {
  checkOperatorData,
  injectHttp,
  receiptsSealed,
  writeOperatorData,
  type OperatorData,
} from '../helpers/upgrade-scenario.js';

// `keyplane backup`, then the restore docs/operations.md#restoring-a-backup gives (the same
// commands), gives a control plane on which everything the users relied on still works.
t.setTimeout(300_000);

const run = promisify(execFile);
const MASTER_KEY = 'backup-round-trip-master-key-0123456789ab';
const ADMIN_TOKEN = 'backup-round-trip-admin-token-0123456789ab';
const env = { KEYPLANE_MASTER_KEY: MASTER_KEY };
const postgres = await postgresAvailability();

/** A control plane on `store`, with the operator data written through its API and sealed. */
async function writeData(t: Test, store: Record<string, unknown>): Promise<OperatorData> {
  const { app } = await build(t, {
    config: { masterKey: MASTER_KEY, adminToken: ADMIN_TOKEN, 'ledger.sealIntervalMs': 50, ...store },
  });
  const http = injectHttp(app);
  return writeOperatorData(http, {
    issuer: app.kp.config.issuer,
    adminToken: ADMIN_TOKEN,
    now: app.kp.now,
    waitForSeal: async (receipts) => {
      const deadline = Date.now() + 30_000;
      while (!(await receiptsSealed(http, receipts))) {
        if (Date.now() > deadline) throw new Error('the receipts were not sealed');
        await new Promise((done) => setTimeout(done, 50));
      }
    },
  });
}

async function checkRestored(t: Test, store: Record<string, unknown>, data: OperatorData): Promise<void> {
  // A minute on: the TOTP code of the step the setup used is spent (RFC 6238 §5.2).
  const clock = manualClock(data.writtenAt + 60_000);
  const { app } = await build(t, {
    now: clock.now,
    config: { masterKey: MASTER_KEY, adminToken: ADMIN_TOKEN, ...store },
  });
  for (const result of await checkOperatorData(injectHttp(app), data, clock.now))
    t.ok(result.ok, result.name, result.detail ? { detail: result.detail } : {});
}

t.test('SQLite: backup while serving, restore by copying the file into a data directory', async (t) => {
  const live = tempDir(t);
  const data = await writeData(t, { dataDir: live });
  const backup = join(tempDir(t), 'keyplane-backup.db');
  const answer = await runInProcess(['backup', '--data', live, '--out', backup], env);
  t.equal(answer.code, 0, answer.stderr);
  t.match(answer.stdout, /^backup written to .* Restore: stop the control plane, copy it to/);

  // docs/operations.md: install -d -m 700 /var/lib/keyplane-restored && cp backup.db …/keyplane.db
  const restored = join(tempDir(t), 'keyplane-restored');
  mkdirSync(restored, { mode: 0o700 });
  await run('cp', [backup, join(restored, 'keyplane.db')]);
  await checkRestored(t, { dataDir: restored }, data);
  const audit = await runInProcess(['ledger', 'audit', '--data', restored], env);
  t.equal(audit.code, 0, audit.stderr);
  t.match(audit.stdout, /^ledger intact: [1-9]\d* epoch\(s\)/);
});

if (!postgres.run) t.test('PostgreSQL backup and restore', { skip: postgres.reason }, () => undefined);
else {
  t.test('PostgreSQL: backup with pg_dump, restore with pg_restore into an empty database', async (t) => {
    const live = await createTestDatabase(t);
    const data = await writeData(t, { dataDir: tempDir(t), databaseUrl: live });
    const backup = join(tempDir(t), 'keyplane-backup.dump');
    const answer = await runInProcess(['backup', '--database', live, '--out', backup], env);
    t.equal(answer.code, 0, answer.stderr);
    t.match(answer.stdout, /pg_restore --no-owner --exit-on-error --single-transaction --dbname <url>/);

    // docs/operations.md: createdb keyplane_restored; pg_restore … --dbname …/keyplane_restored backup.dump
    const restored = await createTestDatabase(t);
    await run('pg_restore', ['--no-owner', '--exit-on-error', '--single-transaction', '--dbname', restored, backup]);
    await checkRestored(t, { dataDir: tempDir(t), databaseUrl: restored }, data);
    const audit = await runInProcess(['ledger', 'audit', '--database', restored], env);
    t.equal(audit.code, 0, audit.stderr);
    t.match(audit.stdout, /^ledger intact: [1-9]\d* epoch\(s\)/);
  });
}
