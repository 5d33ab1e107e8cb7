import t from 'tap';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Database } from '../../control-plane/src/storage/sqlite/driver.js';
import type { FastifyInstance } from 'fastify';
import { buildCheckpointPayload, decodeCheckpoint, signCheckpoint } from '#lib/ledger/checkpoint.js';
import { verifyReceiptCommand } from '../../cli/src/commands/receipt.js';
import { auditLedger } from '../../control-plane/src/ledger/audit-ledger.js';
import { CliError } from '../../cli/src/exit.js';
import { DATABASE_FILE } from '../../control-plane/src/storage/sqlite/database.js';
import { build, tempDir } from '../helpers/build.js';
import { runCli } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';

function addReceiptedRoute(app: FastifyInstance): void {
  app.post('/test/receipted', async () => {
    const { receipt } = await app.kp.storage.transaction((tx) =>
      app.kp.events.record(tx, {
        type: 'keys.rotated',
        at: app.kp.now(),
        outcome: 'success',
        kid: `k-${randomBytes(4).toString('hex')}`,
        retired: null,
      }),
    );
    return { ok: true, receipt };
  });
}

async function served(t: Parameters<typeof build>[0], dataDir?: string) {
  const built = await build(t, {
    skipReady: true,
    config: { 'ledger.sealIntervalMs': 60_000 },
    ...(dataDir ? { dataDir } : {}),
  });
  addReceiptedRoute(built.app);
  await built.app.listen({ port: 0, host: '127.0.0.1' });
  const address = built.app.server.address() as { port: number };
  const receipt = async () =>
    (await built.app.inject({ method: 'POST', url: '/test/receipted' })).json().receipt as string;
  return { ...built, url: `http://127.0.0.1:${address.port}`, receipt };
}

/** Runs the command in-process and returns its exit code (the CLI maps CliError the same way). */
async function exitOf(work: Promise<void>): Promise<number> {
  return (await outcomeOf(work)).code;
}

async function outcomeOf(work: Promise<void>): Promise<{ code: number; message: string }> {
  try {
    await work;
    return { code: 0, message: '' };
  } catch (error) {
    if (error instanceof CliError) return { code: error.exitCode, message: error.message };
    throw error;
  }
}

// One verify runs as a real process; the other runs go in-process through the CLI's program.
t.setTimeout(300_000);

t.test(
  'receipt verify: exit 0 for a sealed receipt, 1 for pending, unknown or tampered, 2 for usage and network errors',
  async (t) => {
    const dir = tempDir(t);
    const cp = await served(t, dir);
    const sealed = await cp.receipt();
    await cp.services.ledger.sealNow();
    const pending = await cp.receipt();

    const ok = await runCli(['receipt', 'verify', sealed, '--control-plane', cp.url]);
    t.equal(ok.code, 0, 'verified: exit 0');
    t.match(ok.stdout, /^verified: receipt [0-9a-f]{64} is in epoch 1/);
    t.match(ok.stderr, /checking the canonical hash/);

    const notYet = await runInProcess(['receipt', 'verify', pending, '--control-plane', cp.url]);
    t.equal(notYet.code, 1);
    t.match(notYet.stdout, /not verified: .*pending/);

    t.equal(
      await exitOf(verifyReceiptCommand(randomBytes(32).toString('hex'), { controlPlane: cp.url })),
      1,
      'unknown hash',
    );
    const usage = await runInProcess(['receipt', 'verify', 'XYZ', '--control-plane', cp.url]);
    t.equal(usage.code, 2, 'malformed hash');
    t.equal(await exitOf(verifyReceiptCommand(sealed, {})), 2, 'no --control-plane');
    t.equal(
      await exitOf(verifyReceiptCommand(sealed, { controlPlane: 'http://127.0.0.1:1' })),
      2,
      'unreachable control plane',
    );
    t.equal(
      await exitOf(verifyReceiptCommand(sealed, { controlPlane: cp.url, trustCheckpoint: 'not a jws' })),
      2,
      'a malformed pinned checkpoint',
    );

    // Tamper with the stored receipt: the served body no longer hashes to the address.
    const db = new Database(join(dir, DATABASE_FILE));
    db.prepare(
      'UPDATE receipts SET body = replace(body, \'"outcome":"success"\', \'"outcome":"failure"\') WHERE hash = ?',
    ).run(sealed);
    db.close();
    t.equal(await exitOf(verifyReceiptCommand(sealed, { controlPlane: cp.url })), 1, 'a tampered receipt');
  },
);

t.test(
  'receipt verify --trust-checkpoint follows prev to a pinned checkpoint, before or after, and refuses a fork',
  async (t) => {
    const cp = await served(t);
    const first = await cp.receipt();
    await cp.services.ledger.sealNow();
    const pinnedEarly = (await cp.app.inject({ method: 'GET', url: '/receipts/checkpoints/1' })).json()
      .checkpoint as string;
    await cp.receipt();
    await cp.services.ledger.sealNow();
    const last = await cp.receipt();
    await cp.services.ledger.sealNow();
    const pinnedLate = (await cp.app.inject({ method: 'GET', url: '/receipts/checkpoints/latest' })).json()
      .checkpoint as string;
    t.equal(decodeCheckpoint(pinnedLate).payload.epoch, 3);

    const file = join(tempDir(t), 'pinned.jws');
    writeFileSync(file, pinnedEarly + '\n');
    t.equal(
      await exitOf(verifyReceiptCommand(last, { controlPlane: cp.url, trustCheckpoint: file })),
      0,
      'a receipt newer than the pin (read from a file)',
    );
    t.equal(
      await exitOf(verifyReceiptCommand(first, { controlPlane: cp.url, trustCheckpoint: pinnedLate })),
      0,
      'a receipt older than the pin',
    );
    t.equal(
      await exitOf(verifyReceiptCommand(first, { controlPlane: cp.url, trustCheckpoint: pinnedEarly })),
      0,
      "the pin is the receipt's own checkpoint",
    );

    // A second, different epoch 1 signed with the same key: a rewritten history.
    const forged = await signCheckpoint(
      buildCheckpointPayload({ epoch: 1, root: 'cd'.repeat(32), size: 1, previous: null, now: Date.now() }),
      cp.services.keys.current(),
    );
    const fork = await outcomeOf(verifyReceiptCommand(last, { controlPlane: cp.url, trustCheckpoint: forged }));
    t.equal(fork.code, 1);
    t.match(fork.message, /not verified: .*fork/);
    const tampered = await signCheckpoint(
      { ...decodeCheckpoint(pinnedEarly).payload, root: 'ef'.repeat(32) },
      cp.services.keys.current(),
    );
    t.equal(
      await exitOf(verifyReceiptCommand(first, { controlPlane: cp.url, trustCheckpoint: tampered })),
      1,
      'a pinned checkpoint the chain does not reach',
    );
  },
);

t.test('ledger audit names the first epoch whose root differs after a receipt row is edited', async (t) => {
  const dir = tempDir(t);
  const cp = await served(t, dir);
  const byEpoch: string[][] = [];
  for (let epoch = 1; epoch <= 3; epoch++) {
    const hashes: string[] = [];
    for (let i = 0; i < 4; i++) hashes.push(await cp.receipt());
    await cp.services.ledger.sealNow();
    byEpoch.push(hashes);
  }
  await cp.receipt();
  const intact = await auditLedger(cp.services.storage);
  t.same(intact, { epochs: 3, receipts: 12, pending: 1 });

  const db = new Database(join(dir, DATABASE_FILE));
  db.prepare('UPDATE receipts SET body = replace(body, \'"keys.rotated"\', \'"keys.rotatee"\') WHERE hash = ?').run(
    byEpoch[1]![2],
  );
  db.close();
  const broken = await runInProcess(['ledger', 'audit', '--data', dir]);
  t.equal(broken.code, 1);
  t.match(broken.stdout, /^ledger audit failed at epoch 2: root differs/);
  t.match(broken.stdout, new RegExp(`receipt ${byEpoch[1]![2]} now hashes to`));
  t.match(broken.stderr, /epoch 1: 4 receipts, root [0-9a-f]{64} ok/);
  t.match((await auditLedger(cp.services.storage)).failure, /^epoch 2: /, 'the same from the function');
});
