import t from 'tap';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLocalJWKSet } from 'jose';
import { auditLedger } from '../../../control-plane/src/ledger/audit-ledger.js';
import { openPostgresStorage } from '../../../control-plane/src/storage/postgres/index.js';
import { verifyCheckpointChain } from '#lib/ledger/verify-chain.js';
import { verifyReceiptProof } from '#lib/ledger/verify-receipt.js';
import { TEST_MASTER_KEY, tempDir } from '../../helpers/build.js';
import { startCli, type Server } from '../../helpers/cli.js';
import { createTestDatabase, postgresAvailability } from '../../helpers/postgres.js';
import { REDIS_URL, redisAvailability } from '../../helpers/redis.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';

/**
 * Two `keyplane control-plane` processes on one PostgreSQL and one Redis take a sign-in load, both sealing
 * epochs as their counts fill up; one is killed with SIGKILL in the middle. The survivor must
 * seal what was left, every receipt hash a client was given must verify, and the chain must
 * have no gap and no epoch sealed twice.
 */

const [postgres, redis] = [await postgresAvailability(), await redisAvailability()];
t.setTimeout(300_000);

async function call(base: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json', origin: ISSUER },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, json: await res.json() };
}

async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  probe.close();
  await once(probe, 'close');
  return port;
}

// Both replicas serve one issuer (the origin passkeys are bound to), as behind a load balancer.
const ISSUER = 'http://localhost:4400';

/** One passkey ceremony: begun on `base`, finished on `finish` (by default the same replica). */
async function ceremony(
  base: string,
  authenticator: SoftAuthenticator,
  username?: string,
  finish = base,
): Promise<string> {
  if (username) {
    const begin = await call(base, '/auth/registration-options', { username });
    const done = await call(finish, '/auth/registration-verify', {
      user: username,
      response: authenticator.create(begin.json.options),
      signupToken: begin.json.signupToken,
    });
    if (done.status !== 200) throw new Error(`registration-verify ${done.status}: ${JSON.stringify(done.json)}`);
    return done.json.receipt;
  }
  const begin = await call(base, '/auth/assertion-options');
  const done = await call(finish, '/auth/assertion-verify', { response: authenticator.get(begin.json.options) });
  if (done.status !== 200) throw new Error(`assertion-verify ${done.status}: ${JSON.stringify(done.json)}`);
  return done.json.receipt;
}

if (!postgres.run || !redis.run) {
  t.test(
    'a replica killed mid-load on PostgreSQL and Redis',
    { skip: !postgres.run ? postgres.reason : (redis as { reason: string }).reason },
    () => undefined,
  );
} else
  t.test(
    'a replica killed with SIGKILL under load loses no receipt; the survivor seals the rest in one unbroken chain',
    async (t) => {
      const databaseUrl = await createTestDatabase(t);
      const config = join(tempDir(t), 'keyplane.yaml');
      writeFileSync(
        config,
        [
          `issuer: ${ISSUER}`,
          'limits:',
          '  authPerIpPerMinute: 1000000',
          '  authPerAccountPerMinute: 1000000',
          'ledger:',
          '  sealIntervalMs: 2000',
          '  sealMaxReceipts: 20',
          'logLevel: warn',
        ].join('\n'),
      );
      // The processes share their one-time values, replay caches and counters through Redis. They
      // use the server's default key prefix, so they get a logical database of their own, away from
      // other suites' rate-limit counters for 127.0.0.1.
      const redisUrl = new URL(REDIS_URL);
      redisUrl.pathname = `/${1 + (process.pid % 15)}`;
      const env = {
        KEYPLANE_MASTER_KEY: TEST_MASTER_KEY,
        KEYPLANE_DATABASE_URL: databaseUrl,
        KEYPLANE_REDIS_URL: redisUrl.toString(),
      };
      // The listening line names the shared issuer, so each replica gets a known port of its own.
      const start = async () => {
        const port = await freePort();
        const server = await startCli(
          ['control-plane', '--port', String(port), '--data', tempDir(t), '--config', config],
          env,
          90_000,
        );
        return Object.assign(server, { url: `http://127.0.0.1:${port}` });
      };
      const victim: Server = await start();
      const survivor: Server = await start();
      t.teardown(async () => {
        for (const s of [victim, survivor])
          if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
      });

      // Sign-up begins on one replica and finishes on the other: the challenge is in Redis. Under
      // load each worker then keeps to one replica, so the kill stops only the victim's workers.
      const given: string[] = [];
      const failures: string[] = [];
      let killed = false;
      const workers = [victim, survivor, victim, survivor].map((server, i) => ({
        server,
        i,
        authenticator: new SoftAuthenticator(ISSUER),
      }));
      const other = (server: Server) => (server === victim ? survivor : victim);
      for (const w of workers)
        given.push(await ceremony(w.server.url, w.authenticator, `replica-user-${w.i}`, other(w.server).url));
      // A sign-in begun on one replica and finished on the other, both ways.
      for (const w of workers.slice(0, 2))
        given.push(await ceremony(w.server.url, w.authenticator, undefined, other(w.server).url));
      const load = workers.map(async (w) => {
        for (let n = 0; n < 400 && !(killed && w.server === victim); n++) {
          try {
            given.push(await ceremony(w.server.url, w.authenticator));
          } catch (error) {
            if (!(killed && w.server === victim)) failures.push((error as Error).message);
            return;
          }
          if (killed && n > 30) return;
        }
      });
      const began = Date.now();
      while (given.length < 100 && failures.length === 0 && Date.now() - began < 90_000)
        await new Promise((r) => setTimeout(r, 20));
      const exited = once(victim.child, 'exit');
      victim.child.kill('SIGKILL');
      killed = true;
      await exited;
      await Promise.all(load);
      t.same(failures, [], 'the survivor kept answering');
      t.ok(given.length >= 100, `${given.length} receipt hashes handed out`);

      const base = survivor.url;
      const jwks = createLocalJWKSet((await call(base, '/.well-known/jwks.json')).json);
      // The survivor seals what the victim left pending (by count or on its 2 s timer).
      const unsealed: string[] = [];
      const unverified: string[] = [];
      for (const hash of new Set(given)) {
        let found = await call(base, `/receipts/${hash}`);
        for (let i = 0; i < 200 && found.status === 200 && found.json.pending; i++) {
          await new Promise((r) => setTimeout(r, 100));
          found = await call(base, `/receipts/${hash}`);
        }
        if (found.status !== 200 || found.json.pending) {
          unsealed.push(hash);
          continue;
        }
        const verdict = await verifyReceiptProof(
          { hash, receipt: found.json.receipt, proof: found.json.proof, checkpoint: found.json.checkpoint },
          jwks,
        );
        if (!verdict.ok) unverified.push(`${hash}: ${verdict.failure}`);
      }
      t.same(unsealed, [], 'every receipt a client was given is found and sealed');
      t.same(unverified, [], 'each with a proof that verifies');

      const latest = (await call(base, '/receipts/checkpoints/latest')).json.checkpoint as string;
      const first = (await call(base, '/receipts/checkpoints/1')).json.checkpoint as string;
      const chain = await verifyCheckpointChain(
        latest,
        first,
        async (n) => (await call(base, `/receipts/checkpoints/${n}`)).json.checkpoint,
        jwks,
      );
      t.ok(chain.ok, chain.failure ?? 'one chain from the latest checkpoint back to epoch 1');

      t.equal(await survivor.stop('SIGTERM'), 0, 'the survivor stops cleanly');
      const storage = await openPostgresStorage(databaseUrl, { poolSize: 1 });
      const audit = await auditLedger(storage).finally(() => storage.close());
      t.equal(audit.failure, undefined, 'the offline audit recomputes every epoch');
      t.ok(audit.receipts >= new Set(given).size, 'no receipt sealed twice or lost');
    },
  );
