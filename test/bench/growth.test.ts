import t from 'tap';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { childEnv } from '../helpers/cli.js';
import { build, tempDir, TEST_MASTER_KEY } from '../helpers/build.js';
import { runInProcess } from '../helpers/cli-in-process.js';

const run = promisify(execFile);

/** `npm run bench:growth -- …` as a process (what the script runs), with the test's master key. */
async function growth(args: string[], env: Record<string, string> = {}) {
  return run(process.execPath, ['--import', 'tsx', 'bench/growth.ts', ...args], {
    env: { ...childEnv(), KEYPLANE_MASTER_KEY: TEST_MASTER_KEY, ...env },
    maxBuffer: 16 << 20,
  });
}

t.test('bench:growth --data seeds a store the audit passes and the control plane serves', async (t) => {
  const data = tempDir(t);
  const config = join(tempDir(t), 'keyplane.yaml');
  // Small epochs, so that a tiny store still has several: chained checkpoints and the transparency log.
  writeFileSync(config, 'ledger:\n  sealMaxReceipts: 100\n');
  const seeded = await growth(['--accounts', '30', '--receipts', '250', '--data', data], { KEYPLANE_CONFIG: config });
  t.match(seeded.stdout, /seeded 30 accounts, 3 clients, 250 receipts in /);

  const audit = await runInProcess(['ledger', 'audit', '--data', data, '--config', config], {
    KEYPLANE_MASTER_KEY: TEST_MASTER_KEY,
  });
  t.equal(audit.code, 0, 'ledger audit passes');
  t.match(
    audit.stdout,
    /ledger intact: 3 epoch\(s\), 250 sealed receipt\(s\), chain and signatures verified; 0 pending/,
  );

  const { app, services } = await build(t, { dataDir: data, config: { 'ledger.sealMaxReceipts': 100 } });
  const account = await services.storage.identities.findByUsername('growth00000007');
  t.equal(account?.identityId, 'usr_growth_00000007');
  const passkeys = await services.storage.credentials.listByIdentity('usr_growth_00000007');
  t.equal(passkeys.length, 1, 'each account holds a passkey');
  t.ok(await services.storage.clients.get('cl_growth_00000002'), 'one client per 10 accounts');
  const [receipt] = await services.storage.receipts.list({ after: 0, limit: 1, subject: 'usr_growth_00000000' });
  const proof = await app.inject({ method: 'GET', url: `/receipts/${receipt!.hash}` });
  t.equal(proof.statusCode, 200);
  t.match(proof.json(), { receipt: { kind: 'account.created' }, proof: { epoch: 1, size: 100 }, tlog_index: Number });
  const checkpoint = await app.inject({ method: 'GET', url: '/receipts/checkpoint' });
  t.match(checkpoint.body, /\n250\n/, 'the transparency log holds every seeded receipt');
});

t.test('bench:growth seeds 10 receipts per account when --receipts is left out', async (t) => {
  const data = tempDir(t);
  const seeded = await growth(['--accounts', '12', '--data', data]);
  t.match(seeded.stdout, /seeded 12 accounts, 1 clients, 120 receipts in /);
  const refused = await growth(['--accounts', 'many', '--data', data]).catch(
    (error: { code: number; stderr: string }) => error,
  );
  t.match(refused, { code: 2, stderr: /--accounts must be a whole number, not many/ });
});

t.test('bench:growth without --data measures a small store against a larger one (smoke scale)', async (t) => {
  const measured = await growth(['--accounts', '40', '--receipts', '400', '--small-accounts', '20'], {
    BENCH_ROUNDS: '1',
    BENCH_SAMPLES: '2',
  });
  for (const op of ['passkey sign-in', 'code exchange', 'refresh', 'introspection', 'inclusion proof', 'absence proof'])
    t.match(measured.stdout, new RegExp(`\\| ${op} \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|`), op);
  t.match(measured.stdout, /proof sizes \(hashes in the audit path/);
  t.match(measured.stdout, /target: every operation within 1\.3× of the small store: (met|NOT met)/);
});
