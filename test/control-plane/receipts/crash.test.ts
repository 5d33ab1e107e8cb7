import t from 'tap';
import { writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { Database } from '../../../control-plane/src/storage/sqlite/driver.js';
import { createLocalJWKSet } from 'jose';
import { decodeCheckpoint } from '#lib/ledger/checkpoint.js';
import { verifyCheckpointChain } from '#lib/ledger/verify-chain.js';
import { verifyReceiptProof } from '#lib/ledger/verify-receipt.js';
import { auditLedger } from '../../../control-plane/src/ledger/audit-ledger.js';
import { DATABASE_FILE } from '../../../control-plane/src/storage/sqlite/database.js';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import { TEST_MASTER_KEY, tempDir } from '../../helpers/build.js';
import { startCli, type Server } from '../../helpers/cli.js';

/**
 * No lost receipts: a real control plane (a child process) takes a load of passkey sign-ins,
 * is killed with SIGKILL in the middle, and restarts on the same data dir. Every receipt hash
 * a client was given must then be found, sealed, with a proof that verifies.
 */

const env = { KEYPLANE_MASTER_KEY: TEST_MASTER_KEY };

async function post(base: string, path: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, json: await res.json() };
}

async function getJson(base: string, path: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, json: await res.json() };
}

async function signUp(base: string, username: string, authenticator: SoftAuthenticator): Promise<string> {
  const begin = await post(base, '/auth/registration-options', { username });
  if (begin.status !== 200) throw new Error(`registration-options: ${JSON.stringify(begin.json)}`);
  const done = await post(base, '/auth/registration-verify', {
    user: username,
    response: authenticator.create(begin.json.options),
    signupToken: begin.json.signupToken,
  });
  if (done.status !== 200 || typeof done.json.receipt !== 'string')
    throw new Error(`registration-verify: ${JSON.stringify(done.json)}`);
  return done.json.receipt;
}

async function signIn(base: string, authenticator: SoftAuthenticator): Promise<string> {
  const begin = await getJson(base, '/auth/assertion-options');
  if (begin.status !== 200) throw new Error(`assertion-options: ${JSON.stringify(begin.json)}`);
  const done = await post(base, '/auth/assertion-verify', { response: authenticator.get(begin.json.options) });
  if (done.status !== 200 || typeof done.json.receipt !== 'string')
    throw new Error(`assertion-verify ${done.status}: ${JSON.stringify(done.json)}`);
  return done.json.receipt;
}

// Child processes run TypeScript through tsx; on a busy machine this takes a while.
t.setTimeout(300_000);

t.test('every receipt hash a client was given survives SIGKILL in the middle of a sign-in load', async (t) => {
  const dir = tempDir(t);
  const config = join(tempDir(t), 'keyplane.yaml');
  writeFileSync(
    config,
    [
      'limits:',
      '  authPerIpPerMinute: 1000000',
      '  authPerAccountPerMinute: 1000000',
      'ledger:',
      '  sealIntervalMs: 60000',
      '  sealMaxReceipts: 50',
      'logLevel: warn',
    ].join('\n'),
  );
  const args = ['control-plane', '--port', '0', '--data', dir, '--config', config];
  let server: Server | undefined = await startCli(args, env, 60_000);
  t.teardown(() => {
    if (server && server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  });
  const base = server.url;
  const given: string[] = [];
  const workers = Array.from({ length: 4 }, () => new SoftAuthenticator(base));
  for (const [i, authenticator] of workers.entries()) given.push(await signUp(base, `crash-user-${i}`, authenticator));

  // Load: each worker signs in over and over (its own passkey, so signature counters stay ordered).
  let killed = false;
  const failures: string[] = [];
  const load = workers.map(async (authenticator) => {
    while (!killed) {
      try {
        given.push(await signIn(base, authenticator));
      } catch (error) {
        if (!killed) failures.push((error as Error).message);
        return;
      }
    }
  });
  const target = 120;
  const started = Date.now();
  while (given.length < target && failures.length === 0 && Date.now() - started < 60_000)
    await new Promise((r) => setTimeout(r, 20));
  t.same(failures, [], 'the load ran without refusals');
  // Kill while requests are in flight: nothing gets a chance to flush or seal.
  const exited = once(server.child, 'exit');
  server.child.kill('SIGKILL');
  killed = true;
  await exited;
  await Promise.all(load);
  t.ok(given.length >= target, `${given.length} receipt hashes were handed out before the kill`);
  // Epochs of 50 were sealed by count during the load; the rest was pending when the process died.
  const db = new Database(join(dir, DATABASE_FILE));
  const pendingAtKill = (db.prepare('SELECT count(*) AS n FROM receipts WHERE epoch IS NULL').get() as { n: number }).n;
  db.close();
  t.ok(pendingAtKill > 0, `${pendingAtKill} receipts were pending at the kill`);

  server = await startCli(args, env, 60_000);
  const again = server.url;
  const jwks = createLocalJWKSet((await getJson(again, '/.well-known/jwks.json')).json);
  const missing: string[] = [];
  const unverified: string[] = [];
  let pendingSeen = 0;
  for (const hash of new Set(given)) {
    let found = await getJson(again, `/receipts/${hash}`);
    for (let i = 0; i < 100 && found.status === 200 && found.json.pending; i++) {
      pendingSeen++;
      await new Promise((r) => setTimeout(r, 50));
      found = await getJson(again, `/receipts/${hash}`);
    }
    if (found.status !== 200) {
      missing.push(hash);
      continue;
    }
    const verdict = await verifyReceiptProof(
      { hash, receipt: found.json.receipt, proof: found.json.proof, checkpoint: found.json.checkpoint },
      jwks,
    );
    if (!verdict.ok) unverified.push(`${hash}: ${verdict.failure}`);
  }
  t.same(missing, [], 'no receipt a client was given is lost');
  t.same(unverified, [], 'every one is sealed with a proof that verifies');
  t.equal(pendingSeen, 0, 'what was pending at the kill was sealed at start');

  // The epochs form one chain, with no epoch sealed twice or skipped.
  const latest = (await getJson(again, '/receipts/checkpoints/latest')).json.checkpoint as string;
  const first = (await getJson(again, '/receipts/checkpoints/1')).json.checkpoint as string;
  const chain = await verifyCheckpointChain(
    latest,
    first,
    async (n) => (await getJson(again, `/receipts/checkpoints/${n}`)).json.checkpoint,
    jwks,
  );
  t.ok(chain.ok, chain.failure ?? `chain of ${decodeCheckpoint(latest).payload.epoch} epochs`);

  t.equal(await server.stop('SIGTERM'), 0, 'the restarted server stops cleanly');
  server = undefined;
  const stored = openSqliteStorage(dir);
  const audit = await auditLedger(stored).finally(() => stored.close());
  t.equal(audit.failure, undefined, 'the offline audit recomputes every epoch');
  t.equal(audit.pending, 0);
  t.ok(audit.receipts >= new Set(given).size, 'every receipt handed out is in a sealed epoch');
});
