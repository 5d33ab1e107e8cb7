import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { createLocalJWKSet } from 'jose';
import { auditLedger } from '../../../control-plane/src/ledger/audit-ledger.js';
import { verifyCheckpointChain } from '#lib/ledger/verify-chain.js';
import { RedisSharedState } from '#lib/runtime/shared-state/redis.js';
import { build, type Built } from '../../helpers/build.js';
import { signIn, signUp } from '../../helpers/accounts.js';
import {
  ADMIN,
  dpopKey,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  refresh,
  registerClient,
} from '../../helpers/oidc.js';
import { createTestDatabase, postgresAvailability } from '../../helpers/postgres.js';
import { REDIS_URL, redisAvailability } from '../../helpers/redis.js';
import { Browser } from '../../helpers/signed-in.js';

/**
 * Two control planes on one PostgreSQL and one Redis, each request going to the next replica
 * in turn: whatever one replica starts, the other must be able to finish, and every one-time
 * thing must be spent once across both.
 */

const [postgres, redis] = [await postgresAvailability(), await redisAvailability()];

async function replicas(t: Test, config: Record<string, unknown> = {}): Promise<[Built, Built]> {
  const databaseUrl = await createTestDatabase(t);
  const prefix = `kptest:replicas:${randomUUID()}:`;
  const open = async () => {
    const state = await new RedisSharedState(REDIS_URL, { prefix }).connect();
    t.teardown(() => state.close());
    return build(t, { state, config: { databaseUrl, adminToken: ADMIN, 'database.poolSize': 4, ...config } });
  };
  // One after the other: the second starts on a migrated database, as a rolling deploy would.
  const a = await open();
  const b = await open();
  return [a, b];
}

/** An app-shaped round-robin: each inject goes to the next replica. */
function roundRobin(apps: FastifyInstance[]): FastifyInstance {
  let next = 0;
  return {
    inject: (options: InjectOptions) => apps[next++ % apps.length]!.inject(options),
  } as unknown as FastifyInstance;
}

if (!postgres.run || !redis.run) {
  t.test(
    'two replicas on one PostgreSQL and one Redis',
    { skip: !postgres.run ? postgres.reason : (redis as { reason: string }).reason },
    () => undefined,
  );
} else {
  t.test('two replicas starting together on an empty database create one signing-key ring', async (t) => {
    const databaseUrl = await createTestDatabase(t);
    const open = () => build(t, { config: { databaseUrl, adminToken: ADMIN, 'database.poolSize': 2 } });
    const [a, b] = await Promise.all([open(), open()]);
    const keys = await a.services.storage.keys.list();
    t.equal(keys.filter((k) => k.state === 'current').length, 1, 'one current key');
    t.equal(keys.filter((k) => k.state === 'next').length, 1, 'one next key');
    const jwks = async (built: Built) =>
      (await built.app.inject({ url: '/.well-known/jwks.json' }))
        .json()
        .keys.map((k: { kid: string }) => k.kid)
        .sort();
    t.same(await jwks(b), await jwks(a), 'both publish the same key set');
  });

  t.test('sign-up on one replica, sign-in on the other; authorize on one, token on the other', async (t) => {
    const [a, b] = await replicas(t);
    const rr = roundRobin([a.app, b.app]);
    const account = await signUp(rr, 'ada');
    t.ok(await b.services.storage.identities.get(account.identityId), 'the account exists for the other replica');
    const jar = await signIn(rr, account);
    t.ok(Object.keys(jar).length > 0, 'a session cookie from a ceremony that began on the other replica');

    const client = await registerClient(a.app);
    const browser = new Browser(rr);
    for (const [name, value] of Object.entries(jar)) browser.cookies.set(name, value);
    const { verifier, challenge } = pkcePair();
    const { code } = await obtainCode(browser, goodRequest(client, challenge));
    const exchanged = await exchangeCode(b.app, client, code, verifier);
    t.equal(exchanged.statusCode, 200, 'the code from one replica is exchanged on the other');
    t.ok(exchanged.json().refresh_token);
  });

  t.test(
    'a code redeemed on both replicas at once is redeemed once; a refresh token used on both rotates once',
    async (t) => {
      const [a, b] = await replicas(t);
      const account = await signUp(a.app, 'grace');
      const client = await registerClient(b.app);
      const browser = new Browser(a.app);
      for (const [name, value] of Object.entries(await signIn(b.app, account))) browser.cookies.set(name, value);

      for (let round = 0; round < 5; round++) {
        const { verifier, challenge } = pkcePair();
        const { code } = await obtainCode(browser, goodRequest(client, challenge));
        const both = await Promise.all([
          exchangeCode(a.app, client, code, verifier),
          exchangeCode(b.app, client, code, verifier),
        ]);
        t.same(both.map((r) => r.statusCode).sort(), [200, 400], `round ${round}: one exchange wins`);
        // A loser that read the code after the winner spent it saw a replay and rightly revoked
        // the winner's tokens; the refresh race runs on a grant of its own.
        const fresh = pkcePair();
        const own = await obtainCode(browser, goodRequest(client, fresh.challenge));
        const issued = (await exchangeCode(b.app, client, own.code, fresh.verifier)).json();
        const raced = await Promise.all([
          refresh(a.app, client, issued.refresh_token),
          refresh(b.app, client, issued.refresh_token),
        ]);
        t.equal(raced.filter((r) => r.statusCode === 200).length, 1, `round ${round}: one rotation wins`);
        t.equal(raced.find((r) => r.statusCode !== 200)?.json().reason, 'invalid_grant');
        // The loser counts as reuse (docs/security.md): the family goes, the winner's new token with it.
        const rotated = raced.find((r) => r.statusCode === 200)?.json().refresh_token;
        t.match((await refresh(a.app, client, rotated)).json(), {
          reason: 'invalid_grant',
          error_description: /revoked/,
        });
      }
    },
  );

  t.test('a DPoP proof used on one replica is a replay on the other', async (t) => {
    const [a, b] = await replicas(t);
    const account = await signUp(a.app, 'alan');
    const client = await registerClient(a.app);
    const browser = new Browser(b.app);
    for (const [name, value] of Object.entries(await signIn(a.app, account))) browser.cookies.set(name, value);
    const key = await dpopKey();
    const proof = await key.proof({});
    const { verifier, challenge } = pkcePair();
    const first = await exchangeCode(
      a.app,
      client,
      (await obtainCode(browser, goodRequest(client, challenge))).code,
      verifier,
      { dpop: proof },
    );
    t.equal(first.statusCode, 200, 'the proof is accepted once');
    const again = pkcePair();
    const second = await exchangeCode(
      b.app,
      client,
      (await obtainCode(browser, goodRequest(client, again.challenge))).code,
      again.verifier,
      { dpop: proof },
    );
    t.equal(second.json().reason, 'invalid_dpop_proof');
  });

  t.test('a lockout started on one replica holds on the other', async (t) => {
    const [a, b] = await replicas(t);
    const account = await signUp(a.app, 'cyril');
    const owner = new Browser(b.app);
    for (const [name, value] of Object.entries(await signIn(b.app, account))) owner.cookies.set(name, value);
    const { codes } = (await owner.post('/auth/recovery/regenerate')).json();
    // Wrong codes alternate between the replicas: the failure count lives in the shared state.
    const guesser = new Browser(roundRobin([a.app, b.app]));
    const reasons: string[] = [];
    for (let i = 1; i <= 5; i++)
      reasons.push(
        (await guesser.post('/auth/recovery/verify', { user: 'cyril', code: `ZZZZ-ZZZZ-ZZZZ-ZZZ${i}` })).json().reason,
      );
    t.same(reasons, [
      'invalid_recovery_code',
      'invalid_recovery_code',
      'invalid_recovery_code',
      'invalid_recovery_code',
      'locked_out',
    ]);
    for (const replica of [a, b]) {
      const right = await new Browser(replica.app).post('/auth/recovery/verify', { user: 'cyril', code: codes[0] });
      t.equal(right.statusCode, 429);
      t.equal(right.json().reason, 'locked_out', 'the right code waits for the lock on either replica');
    }
  });

  t.test('rate limits count across replicas', async (t) => {
    const [a, b] = await replicas(t, { 'limits.authPerIpPerMinute': 4 });
    const rr = roundRobin([a.app, b.app]);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push((await rr.inject({ method: 'GET', url: '/auth/assertion-options' })).statusCode);
    t.same(statuses, [200, 200, 200, 200, 429, 429], 'the fifth request is refused, whichever replica gets it');
  });

  t.test(
    'both replicas sealing at once: every receipt sealed exactly once, the checkpoint chain unbroken',
    async (t) => {
      const [a, b] = await replicas(t, { 'ledger.sealMaxReceipts': 7, 'ledger.sealIntervalMs': 60_000 });
      const rr = roundRobin([a.app, b.app]);
      const hashes: string[] = [];
      // Receipts written on both replicas while both seal (each seals as its own count fills up).
      await Promise.all(
        Array.from({ length: 4 }, async (_, w) => {
          const account = await signUp(rr, `sealer-${w}`);
          for (let i = 0; i < 6; i++) {
            const begin = await rr.inject({ method: 'GET', url: '/auth/assertion-options' });
            const done = await rr.inject({
              method: 'POST',
              url: '/auth/assertion-verify',
              headers: { origin: account.headers.origin },
              payload: { response: account.authenticator.get(begin.json().options) },
            });
            hashes.push(done.json().receipt);
          }
        }),
      );
      await Promise.all([
        a.services.ledger.sealNow(),
        b.services.ledger.sealNow(),
        a.services.ledger.sealNow(),
        b.services.ledger.sealNow(),
      ]);
      t.equal(await a.services.storage.receipts.pendingCount(), 0, 'nothing left pending');
      const missing = [];
      for (const hash of hashes) if ((await b.services.storage.receipts.get(hash))?.epoch == null) missing.push(hash);
      t.same(missing, [], 'every receipt handed out is sealed');
      const audit = await auditLedger(a.services.storage);
      t.equal(audit.failure, undefined, 'every epoch recomputes, every checkpoint links to the one before');
      t.ok(audit.epochs > 1, `${audit.epochs} epochs`);
      const latest = (await a.services.storage.receipts.latestCheckpoint())!;
      const jwks = createLocalJWKSet({
        keys: (await a.services.storage.keys.list()).map((k) => ({ ...k.publicJwk, kid: k.kid, alg: 'ES256' })),
      } as never);
      const chain = await verifyCheckpointChain(
        latest.jws,
        (await a.services.storage.receipts.checkpoint(1))!.jws,
        async (n) => (await b.services.storage.receipts.checkpoint(n))!.jws,
        jwks,
      );
      t.ok(chain.ok, chain.failure ?? 'the chain verifies from the latest checkpoint back to epoch 1');
    },
  );
}
