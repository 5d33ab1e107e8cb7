import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from 'jose';
import type { FastifyInstance } from 'fastify';
import { verifyAbsenceProof } from '#lib/ledger/absence.js';
import { decodeCheckpoint } from '#lib/ledger/checkpoint.js';
import { until } from '../../helpers/until.js';
import { build as buildWhole, manualClock, tempDir, type BuildOptions } from '../../helpers/build.js';

// The receipts area and the published keys (discovery) are all these suites call.
const build = (t: Parameters<typeof buildWhole>[0], options: BuildOptions = {}) =>
  buildWhole(t, { areas: ['receipts', 'discovery'], ...options });

/** Adds a route that changes nothing but records a `keys.rotated` event, as a receipted action would. */
function addReceiptedRoute(app: FastifyInstance): void {
  app.post<{ Querystring: { fail?: string } }>('/test/receipted', async (request) => {
    const { receipt } = await app.kp.storage.transaction(async (tx) => {
      const recorded = await app.kp.events.record(tx, {
        type: 'keys.rotated',
        at: app.kp.now(),
        outcome: 'success',
        kid: `k-${randomBytes(4).toString('hex')}`,
        retired: null,
      });
      if (request.query.fail) throw new Error('the action failed after its receipt was written');
      return recorded;
    });
    return { ok: true, receipt };
  });
}

// An independent verifier: RFC 9162 §2.1.3.2 and RFC 8785 written out here, sharing no code with lib/ledger.
const sha = (...parts: Buffer[]) => parts.reduce((h, p) => h.update(p), createHash('sha256')).digest();
function jcs(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(jcs).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${jcs((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}
async function independentlyVerify(
  hash: string,
  body: { receipt: unknown; proof: { epoch: number; index: number; size: number; path: string[] }; checkpoint: string },
  jwks: JSONWebKeySet,
): Promise<boolean> {
  if (createHash('sha256').update(jcs(body.receipt)).digest('hex') !== hash) return false;
  const { payload, protectedHeader } = await compactVerify(body.checkpoint, createLocalJWKSet(jwks), {
    algorithms: ['ES256'],
  });
  if (!protectedHeader.kid) return false;
  const cp = JSON.parse(new TextDecoder().decode(payload)) as { epoch: number; root: string; size: number };
  if (cp.epoch !== body.proof.epoch || cp.size !== body.proof.size) return false;
  const k = sha(Buffer.from('keyplane:receipt:v1', 'ascii'), Buffer.from(hash, 'hex'));
  let fn = body.proof.index;
  let sn = body.proof.size - 1;
  if (fn > sn) return false;
  let r = sha(Buffer.from([0]), k);
  for (const hex of body.proof.path) {
    const p = Buffer.from(hex, 'hex');
    if (sn === 0) return false;
    if (fn & 1 || fn === sn) {
      r = sha(Buffer.from([1]), p, r);
      while (!(fn & 1) && fn !== 0) {
        fn >>= 1;
        sn >>= 1;
      }
    } else r = sha(Buffer.from([1]), r, p);
    fn >>= 1;
    sn >>= 1;
  }
  return sn === 0 && r.toString('hex') === cp.root;
}

t.test(
  'a receipted action returns a hash that is pending, then sealed with a proof an independent verifier accepts',
  async (t) => {
    const clock = manualClock();
    const { app, services } = await build(t, {
      skipReady: true,
      now: clock.now,
      config: { 'ledger.sealIntervalMs': 60_000 },
    });
    addReceiptedRoute(app);
    await app.ready();
    const hashes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({ method: 'POST', url: '/test/receipted' });
      t.equal(res.statusCode, 200);
      hashes.push(res.json().receipt);
    }
    t.ok(
      hashes.every((h) => /^[0-9a-f]{64}$/.test(h)),
      'each response carries receipt: <hex sha-256>',
    );
    const pending = (await app.inject({ method: 'GET', url: `/receipts/${hashes[0]}` })).json();
    t.same(Object.keys(pending).sort(), ['ok', 'pending', 'receipt']);
    t.equal(pending.pending, true);
    t.equal(pending.receipt.kind, 'keys.rotated');
    t.equal(pending.receipt.at, '2026-11-22T12:00:00.000Z');
    t.match(pending.receipt.nonce, /^[0-9a-f]{32}$/);

    t.same(await services.ledger.sealNow(), [1]);
    const jwks = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    const indices = new Set<number>();
    for (const hash of hashes) {
      const res = await app.inject({ method: 'GET', url: `/receipts/${hash}` });
      t.equal(res.statusCode, 200);
      const body = res.json();
      t.same(Object.keys(body).sort(), ['checkpoint', 'ok', 'proof', 'receipt', 'tlog_index', 'tree_size']);
      t.equal(body.proof.epoch, 1);
      t.equal(body.proof.size, 3);
      indices.add(body.proof.index);
      t.ok(await independentlyVerify(hash, body, jwks), `independent verifier accepts ${hash.slice(0, 8)}`);
      t.equal(
        decodeCheckpoint(body.checkpoint).kid,
        services.keys.current().kid,
        'signed by the current key, kid in the header',
      );
    }
    t.same([...indices].sort(), [0, 1, 2], 'each key has its own sorted position');
  },
);

t.test('altered, malformed and unknown hashes are 404, and nothing lists receipts', async (t) => {
  const { app, services } = await build(t, { skipReady: true, config: { 'ledger.sealIntervalMs': 60_000 } });
  addReceiptedRoute(app);
  await app.ready();
  const hash = (await app.inject({ method: 'POST', url: '/test/receipted' })).json().receipt as string;
  await services.ledger.sealNow();
  const flipped = hash.slice(0, -1) + (hash.endsWith('0') ? '1' : '0');
  for (const [name, url] of [
    ['one character changed', `/receipts/${flipped}`],
    ['upper case', `/receipts/${hash.toUpperCase()}`],
    ['truncated', `/receipts/${hash.slice(0, 63)}`],
    ['extended', `/receipts/${hash}0`],
    ['not hex', `/receipts/${'g'.repeat(64)}`],
    [
      'the tree key instead of the hash',
      `/receipts/${createHash('sha256').update('keyplane:receipt:v1').update(Buffer.from(hash, 'hex')).digest('hex')}`,
    ],
    ['the listing', '/receipts'],
    ['the listing with a slash', '/receipts/'],
    ['a search', `/receipts?kind=keys.rotated`],
    ['checkpoints list', '/receipts/checkpoints'],
  ]) {
    const res = await app.inject({ method: 'GET', url: url! });
    t.equal(res.statusCode, 404, `${name}: 404`);
    t.equal(res.json().ok, false, `${name}: envelope`);
  }
  t.equal((await app.inject({ method: 'GET', url: `/receipts/${hash}` })).statusCode, 200, 'the exact hash is found');
});

t.test('an action whose receipt is written and then fails leaves no receipt', async (t) => {
  const { app, services } = await build(t, { skipReady: true, config: { 'ledger.sealIntervalMs': 60_000 } });
  addReceiptedRoute(app);
  app.post('/test/unreceiptable', async () => {
    await app.kp.storage.transaction(async (tx) => {
      // A receipt with the same hash as an existing one cannot be written: the action fails with it.
      await tx.receipts.append({ kind: 'test' }, 'ab'.repeat(32), 0);
      await tx.receipts.append({ kind: 'test' }, 'ab'.repeat(32), 0);
    });
    return { ok: true };
  });
  await app.ready();
  const res = await app.inject({ method: 'POST', url: '/test/receipted?fail=1' });
  t.equal(res.statusCode, 500);
  t.same(await services.ledger.sealNow(), [], 'nothing was left pending');
  const broken = await app.inject({ method: 'POST', url: '/test/unreceiptable' });
  t.equal(broken.statusCode, 500, 'a receipt that cannot be written fails the action');
  t.equal(
    (await app.inject({ method: 'GET', url: `/receipts/${'ab'.repeat(32)}` })).statusCode,
    404,
    'and nothing of it stays',
  );
});

t.test('checkpoints chain through prev and are served by epoch and as latest', async (t) => {
  const clock = manualClock();
  const { app, services } = await build(t, {
    skipReady: true,
    now: clock.now,
    config: { 'ledger.sealIntervalMs': 60_000 },
  });
  addReceiptedRoute(app);
  await app.ready();
  t.equal(
    (await app.inject({ method: 'GET', url: '/receipts/checkpoints/latest' })).json().reason,
    'unknown_epoch',
    'no checkpoint before the first epoch',
  );
  for (let epoch = 1; epoch <= 3; epoch++) {
    for (let i = 0; i < epoch; i++) await app.inject({ method: 'POST', url: '/test/receipted' });
    clock.advance(1000);
    t.same(await services.ledger.sealNow(), [epoch]);
  }
  t.same(await services.ledger.sealNow(), [], 'no empty epochs');
  const latest = (await app.inject({ method: 'GET', url: '/receipts/checkpoints/latest' })).json().checkpoint as string;
  let current = decodeCheckpoint(latest);
  t.equal(current.payload.epoch, 3);
  t.equal(current.payload.size, 3);
  let jws = latest;
  while (current.payload.prev !== null) {
    const res = await app.inject({ method: 'GET', url: `/receipts/checkpoints/${current.payload.epoch - 1}` });
    t.equal(res.statusCode, 200);
    const previous = res.json().checkpoint as string;
    t.equal(
      createHash('sha256').update(previous).digest('hex'),
      current.payload.prev,
      `epoch ${current.payload.epoch} chains to ${current.payload.epoch - 1}`,
    );
    jws = previous;
    current = decodeCheckpoint(previous);
  }
  t.equal(current.payload.epoch, 1);
  t.equal(current.payload.at, '2026-11-22T12:00:01.000Z');
  t.ok(jws);
  t.equal((await app.inject({ method: 'GET', url: '/receipts/checkpoints/4' })).json().reason, 'unknown_epoch');
  t.equal((await app.inject({ method: 'GET', url: '/receipts/checkpoints/0' })).statusCode, 400);
  t.equal((await app.inject({ method: 'GET', url: '/receipts/checkpoints/x1' })).statusCode, 400);
});

t.test('proves a hash absent from an epoch with the neighbouring keys', async (t) => {
  const { app, services } = await build(t, { skipReady: true, config: { 'ledger.sealIntervalMs': 60_000 } });
  addReceiptedRoute(app);
  await app.ready();
  const hashes: string[] = [];
  for (let i = 0; i < 20; i++)
    hashes.push((await app.inject({ method: 'POST', url: '/test/receipted' })).json().receipt);
  await services.ledger.sealNow();
  for (let probe = 0; probe < 30; probe++) {
    const hash = randomBytes(32).toString('hex');
    const res = await app.inject({ method: 'GET', url: `/receipts/${hash}/absence?epoch=1` });
    t.equal(res.statusCode, 200);
    const { absence, checkpoint } = res.json();
    const cp = decodeCheckpoint(checkpoint).payload;
    const key = createHash('sha256').update('keyplane:receipt:v1').update(Buffer.from(hash, 'hex')).digest();
    t.equal(absence.key, key.toString('hex'));
    if (!verifyAbsenceProof({ key, proof: absence, root: cp.root, size: cp.size }))
      t.fail(`absence of ${hash} does not verify`);
    t.notOk(
      hashes.includes(absence.left?.key) || hashes.includes(absence.right?.key),
      'neighbours are tree keys, never look-up hashes',
    );
  }
  const present = await app.inject({ method: 'GET', url: `/receipts/${hashes[3]}/absence?epoch=1` });
  t.equal(present.statusCode, 409);
  t.equal(present.json().reason, 'receipt_in_epoch');
  t.equal(
    (await app.inject({ method: 'GET', url: `/receipts/${hashes[3]}/absence?epoch=2` })).json().reason,
    'unknown_epoch',
  );
  t.equal(
    (await app.inject({ method: 'GET', url: `/receipts/${hashes[3]!.toUpperCase()}/absence?epoch=1` })).statusCode,
    400,
  );
  t.equal(
    (await app.inject({ method: 'GET', url: `/receipts/${hashes[3]}/absence` })).statusCode,
    400,
    'the epoch is required',
  );
  t.equal((await app.inject({ method: 'GET', url: `/receipts/${hashes[3]}/absence?epoch=-1` })).statusCode, 400);
});

t.test('sealing survives a restart: pending receipts are sealed at start, no epoch is sealed twice', async (t) => {
  const dataDir = tempDir(t);
  const first = await build(t, { skipReady: true, dataDir, config: { 'ledger.sealIntervalMs': 60_000 } });
  addReceiptedRoute(first.app);
  await first.app.ready();
  const before = (await first.app.inject({ method: 'POST', url: '/test/receipted' })).json().receipt as string;
  await first.services.ledger.sealNow();
  const left = (await first.app.inject({ method: 'POST', url: '/test/receipted' })).json().receipt as string;
  await first.app.close();
  await first.services.close();

  const second = await build(t, { dataDir, config: { 'ledger.sealIntervalMs': 60_000 } });
  const res = (await second.app.inject({ method: 'GET', url: `/receipts/${left}` })).json();
  t.equal(res.proof.epoch, 2, 'the receipt left pending was sealed at start into the next epoch');
  t.equal((await second.app.inject({ method: 'GET', url: `/receipts/${before}` })).json().proof.epoch, 1);
  const latest = decodeCheckpoint(
    (await second.app.inject({ method: 'GET', url: '/receipts/checkpoints/latest' })).json().checkpoint,
  ).payload;
  t.equal(latest.epoch, 2);
  t.same(await second.services.ledger.sealNow(), []);
});

t.test('seals on its own timer and as soon as sealMaxReceipts are pending', async (t) => {
  const { app, services } = await build(t, {
    skipReady: true,
    config: { 'ledger.sealIntervalMs': 60_000, 'ledger.sealMaxReceipts': 5 },
  });
  addReceiptedRoute(app);
  await app.ready();
  const hashes: string[] = [];
  for (let i = 0; i < 5; i++)
    hashes.push((await app.inject({ method: 'POST', url: '/test/receipted' })).json().receipt);
  // The fifth receipt schedules a seal right after its transaction; wait for it without sleeping on time.
  for (let i = 0; i < 100 && (await services.storage.receipts.pendingCount()) > 0; i++)
    await new Promise((r) => setImmediate(r));
  t.equal(await services.storage.receipts.pendingCount(), 0, 'sealed without waiting for the interval');
  t.equal((await app.inject({ method: 'GET', url: `/receipts/${hashes[4]}` })).json().proof.size, 5);

  const timed = await build(t, { skipReady: true, config: { 'ledger.sealIntervalMs': 50 } });
  addReceiptedRoute(timed.app);
  await timed.app.ready();
  const hash = (await timed.app.inject({ method: 'POST', url: '/test/receipted' })).json().receipt;
  const body = await until('the interval timer to seal the receipt', async () => {
    const found = (await timed.app.inject({ method: 'GET', url: `/receipts/${hash}` })).json();
    return found.pending ? undefined : found;
  });
  t.ok(body.proof, 'the interval timer sealed it');
});
