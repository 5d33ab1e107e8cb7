import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { build, manualClock, openServices, tempDir } from '../helpers/build.js';
import { runCli } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { docCommand } from '../helpers/doc-examples.js';
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
// The runs without a key must not inherit one from the shell.
delete process.env['KEYPLANE_MASTER_KEY'];
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

t.test('SQLite: backup while serving, keyplane restore into a new data directory', async (t) => {
  const live = tempDir(t);
  const data = await writeData(t, { dataDir: live });
  // docs/operations.md's commands as written, its paths here: the backup goes to a directory that need not exist yet.
  const backups = join(tempDir(t), 'backups');
  const stamp = new Date().toISOString().replace(/[-:]|\.\d+/g, '');
  const backup = join(backups, `keyplane-${stamp}.db`);
  const answer = await runInProcess(
    docCommand(
      'docs/operations.md',
      'keyplane backup --data /var/lib/keyplane --out /backups/keyplane-$(date -u +%Y%m%dT%H%M%SZ).db',
      { '/var/lib/keyplane': live, '/backups': backups, '$(date -u +%Y%m%dT%H%M%SZ)': stamp },
    ).args,
    env,
  );
  t.equal(answer.code, 0, answer.stderr);
  t.match(answer.stdout, /^backup written to .* Restore: keyplane restore /);
  t.match(answer.stdout, /Restoring needs this same master key \(KEYPLANE_MASTER_KEY\)/);
  t.match(answer.stderr, /created the directory .*backups \(mode 0700\)/);
  t.equal(statSync(backup).mode & 0o777, 0o600, 'the backup is readable by its owner only');
  t.equal(statSync(dirname(backup)).mode & 0o777, 0o700);
  t.same(readdirSync(dirname(backup)), [`keyplane-${stamp}.db`], 'no staging file is left behind');

  // docs/operations.md#restoring-a-backup: keyplane restore FILE --out DIR, with the same master key.
  const restored = join(tempDir(t), 'keyplane-restored');
  const restoreCommand = docCommand(
    'docs/operations.md',
    'keyplane restore /backups/keyplane-20261126T120000Z.db --out /var/lib/keyplane-restored',
    { '…': MASTER_KEY, '/backups/keyplane-20261126T120000Z.db': backup, '/var/lib/keyplane-restored': restored },
  );
  t.same(restoreCommand.env, env, 'the page sets the master key before restore');
  const restore = await runInProcess(restoreCommand.args, restoreCommand.env);
  t.equal(restore.code, 0, restore.stderr);
  t.match(restore.stdout, /KEYPLANE_MASTER_KEY opens its [1-9]\d* signing key\(s\)/);
  t.equal(statSync(restored).mode & 0o777, 0o700, 'the missing --out directory is created, private');
  t.equal(statSync(join(restored, 'keyplane.db')).mode & 0o777, 0o600);
  await checkRestored(t, { dataDir: restored }, data);
  // A process of its own, as beside any running server: the control plane checkRestored started on
  // this directory still runs in this process (test/helpers/cli-in-process.ts says why that matters).
  const audit = await runCli(
    docCommand('docs/operations.md', 'keyplane ledger audit --data /var/lib/keyplane-restored', {
      '/var/lib/keyplane-restored': restored,
    }).args,
    env,
  );
  t.equal(audit.code, 0, audit.stderr);
  t.match(audit.stdout, /^ledger intact: [1-9]\d* epoch\(s\)/);
  t.notOk(existsSync(join(restored, 'master.key')), 'no master.key beside data restored under KEYPLANE_MASTER_KEY');
});

t.test('a backup is never written through a link or over a file (issue #47 item 9)', async (t) => {
  const live = tempDir(t);
  const { app } = await build(t, { config: { masterKey: MASTER_KEY, dataDir: live } });
  await app.close();
  const dir = tempDir(t);
  const victim = join(dir, 'victim');
  writeFileSync(victim, 'kept');
  const cases: Array<[string, () => string, RegExp]> = [
    ['an existing file', () => victim, /exists; choose a new file/],
    ['a link to a file', () => (symlinkSync(victim, join(dir, 'to-victim')), join(dir, 'to-victim')), /symbolic link/],
    [
      'a dangling link',
      () => (symlinkSync(join(dir, 'would-be-created'), join(dir, 'dangling')), join(dir, 'dangling')),
      /symbolic link/,
    ],
  ];
  for (const [what, make, message] of cases) {
    const out = make();
    const answer = await runInProcess(['backup', '--data', live, '--out', out], env);
    t.equal(answer.code, 2, what);
    t.match(answer.stderr, message, what);
  }
  t.equal(readFileSync(victim, 'utf8'), 'kept', 'the file the link points to is untouched');
  t.notOk(existsSync(join(dir, 'would-be-created')), "the dangling link's target was not created");
});

t.test('restore checks the master key before it writes anything, and names it (issue #54 item 3)', async (t) => {
  const live = tempDir(t);
  await writeData(t, { dataDir: live });
  const backup = join(tempDir(t), 'keyplane-backup.db');
  t.equal((await runInProcess(['backup', '--data', live, '--out', backup], env)).code, 0);
  const target = join(tempDir(t), 'restored');

  const wrong = await runInProcess(['restore', backup, '--out', target], {
    KEYPLANE_MASTER_KEY: 'not-the-key-the-backup-was-taken-with-0123',
  });
  t.equal(wrong.code, 2, wrong.stderr);
  t.match(wrong.stderr, /KEYPLANE_MASTER_KEY does not open the backup's signing key \S+: it is not the master key/);
  t.notOk(existsSync(target), 'nothing was created');

  const none = await runInProcess(['restore', backup, '--out', target]);
  t.equal(none.code, 2);
  t.match(none.stderr, /restoring needs the master key the backup was taken with: set KEYPLANE_MASTER_KEY/);
  t.notOk(existsSync(target));

  // The documented copy by hand, started with another key: the start names the key and stops.
  const byHand = tempDir(t);
  await run('cp', [backup, join(byHand, 'keyplane.db')]);
  await t.rejects(
    openServices(t, { dataDir: byHand, config: { masterKey: 'not-the-key-the-backup-was-taken-with-0123' } }),
    /KEYPLANE_MASTER_KEY does not open this store's signing key \S+: it is not the master key the data was written with/,
  );

  mkdirSync(target);
  writeFileSync(join(target, 'keyplane.db'), '');
  const occupied = await runInProcess(['restore', backup, '--out', target], env);
  t.equal(occupied.code, 2);
  t.match(occupied.stderr, /already holds keyplane\.db; restore into a new data directory/);
});

t.test('a dev-key store restores with its master.key, and never gets a fresh one beside it', async (t) => {
  const live = tempDir(t);
  // Without KEYPLANE_MASTER_KEY: the first use of the key ring generates the dev key.
  t.equal((await runInProcess(['migrate', '--data', live])).code, 0);
  t.equal((await runInProcess(['keys', 'list', '--data', live])).code, 0);
  t.ok(existsSync(join(live, 'master.key')), 'the store was sealed under a generated dev key');
  const backup = join(tempDir(t), 'keyplane-backup.db');
  const answer = await runInProcess(['backup', '--data', live, '--out', backup]);
  t.equal(answer.code, 0, answer.stderr);
  t.match(answer.stdout, /Restoring needs this same master key, the dev key .*master\.key/);

  // The documented copy without the key: the server refuses to start and leaves no fresh key.
  const copied = tempDir(t);
  await run('cp', [backup, join(copied, 'keyplane.db')]);
  const refused = await runInProcess(['keys', 'list', '--data', copied]);
  t.equal(refused.code, 2, refused.stderr);
  t.match(refused.stderr, /sealed with a master key that is not here/);
  t.notOk(existsSync(join(copied, 'master.key')), 'no fresh master.key is left beside the restored data');
  const other = join(tempDir(t), 'other.key');
  writeFileSync(other, 'another-dev-key-entirely\n');
  await run('cp', [other, join(copied, 'master.key')]);
  const mismatched = await runInProcess(['keys', 'list', '--data', copied]);
  t.equal(mismatched.code, 2);
  t.match(mismatched.stderr, /the dev key .*master\.key does not open this store's signing key/);

  const restored = join(tempDir(t), 'restored');
  const restore = await runInProcess([
    'restore',
    backup,
    '--out',
    restored,
    '--master-key-file',
    join(live, 'master.key'),
  ]);
  t.equal(restore.code, 0, restore.stderr);
  t.equal(readFileSync(join(restored, 'master.key'), 'utf8'), readFileSync(join(live, 'master.key'), 'utf8'));
  t.equal(statSync(join(restored, 'master.key')).mode & 0o777, 0o600);
  const listed = await runInProcess(['keys', 'list', '--data', restored]);
  t.equal(listed.code, 0, listed.stderr);
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
