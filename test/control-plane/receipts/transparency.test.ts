import t from 'tap';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { treeKeyOf } from '#lib/ledger/receipt.js';
import { hashLeaf } from '#lib/ledger/merkle-tree.js';
import {
  formatTilePath,
  formatVerifierKey,
  parseCheckpoint,
  parseNote,
  parseVerifierKey,
  TiledTree,
  verifyConsistencyProof,
} from '#lib/ledger/transparency/index.js';
import { build as buildWhole, manualClock, tempDir, TEST_MASTER_KEY, type BuildOptions } from '../../helpers/build.js';
import { runInProcess } from '../../helpers/cli-in-process.js';
import { sigstore, verifyNoteWithSigstore } from '../../helpers/sigstore-tlog.js';

const build = (t: Parameters<typeof buildWhole>[0], options: BuildOptions = {}) =>
  buildWhole(t, { areas: ['receipts', 'discovery'], skipReady: true, ...options });

function addReceiptedRoute(app: FastifyInstance): void {
  app.post('/test/receipted', async () =>
    app.kp.storage.transaction(async (tx) => ({
      ok: true,
      ...(await app.kp.events.record(tx, {
        type: 'keys.rotated',
        at: app.kp.now(),
        outcome: 'success',
        kid: `k-${randomBytes(4).toString('hex')}`,
        retired: null,
      })),
    })),
  );
}

async function receipted(app: FastifyInstance, n: number): Promise<string[]> {
  const hashes: string[] = [];
  for (let i = 0; i < n; i++)
    hashes.push((await app.inject({ method: 'POST', url: '/test/receipted' })).json().receipt);
  return hashes;
}

/** A client that has nothing but the served tiles. */
const tilesOf = (app: FastifyInstance, size: number) =>
  new TiledTree(size, async (level, index, width) => {
    const res = await app.inject({ method: 'GET', url: `/receipts/${formatTilePath({ level, index, width })}` });
    if (res.statusCode !== 200) throw new Error(`tile ${level}/${index}.p/${width}: ${res.statusCode}`);
    return res.rawPayload;
  });

async function noteKey(app: FastifyInstance) {
  const discovery = (await app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
  if (typeof discovery.keyplane_ledger_note_verifier_key !== 'string') throw new Error(JSON.stringify(discovery));
  return parseVerifierKey(discovery.keyplane_ledger_note_verifier_key as string);
}

t.test('sigstore-js verifies the checkpoint note with the key that discovery publishes', async (t) => {
  const { app, services } = await build(t, { config: { 'ledger.sealIntervalMs': 60_000 } });
  addReceiptedRoute(app);
  await app.ready();
  await receipted(app, 3);
  await services.ledger.sealNow();

  const res = await app.inject({ method: 'GET', url: '/receipts/checkpoint' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/plain/);
  const key = await noteKey(app);
  t.equal(key.name, 'localhost:4400/keyplane/ledger', 'the key is named for the origin');
  const served = (await app.inject({ method: 'GET', url: '/receipts/checkpoint/key' })).body;
  t.equal(
    served.split('\n')[0],
    formatVerifierKey(key.name, 1, key.publicKey),
    'the same key at /receipts/checkpoint/key',
  );

  const checkpoint = verifyNoteWithSigstore(res.body, key);
  t.equal(checkpoint.origin, 'localhost:4400/keyplane/ledger');
  t.equal(checkpoint.logSize, 3n);
  t.same(parseCheckpoint(parseNote(res.body).text).root, checkpoint.logHash);

  const other = parseVerifierKey(formatVerifierKey(key.name, 1, randomBytes(32)));
  t.throws(() => verifyNoteWithSigstore(res.body, other), 'not under another key');
  t.throws(() => verifyNoteWithSigstore(res.body.replace('\n3\n', '\n4\n'), key), 'not once the size is changed');
});

t.test(
  'a client with tiles alone proves a receipt (sigstore-js checks the path) and two checkpoints consistent',
  async (t) => {
    const { app, services } = await build(t, { config: { 'ledger.sealIntervalMs': 60_000 } });
    addReceiptedRoute(app);
    await app.ready();
    const key = await noteKey(app);
    const first = await receipted(app, 300);
    await services.ledger.sealNow();
    const note1 = (await app.inject({ method: 'GET', url: '/receipts/checkpoint' })).body;
    const cp1 = verifyNoteWithSigstore(note1, key);
    const second = await receipted(app, 5);
    await services.ledger.sealNow();
    const note2 = (await app.inject({ method: 'GET', url: '/receipts/checkpoint' })).body;
    const cp2 = verifyNoteWithSigstore(note2, key);
    t.equal(cp1.logSize, 300n);
    t.equal(cp2.logSize, 305n);

    const tree = tilesOf(app, Number(cp2.logSize));
    t.same(await tree.root(), cp2.logHash, 'the root of the tiles is the note root');
    for (const hash of [first[0]!, first[299]!, second[4]!]) {
      const body = (await app.inject({ method: 'GET', url: `/receipts/${hash}` })).json();
      t.ok(Number.isInteger(body.tlog_index) && body.tlog_index < body.tree_size, 'tlog_index and tree_size');
      const k = treeKeyOf(hash);
      t.same(await tree.leafHash(body.tlog_index), hashLeaf(k), 'the tile leaf is the hash of its tree key');
      const hashes = await tree.inclusionProof(body.tlog_index);
      t.doesNotThrow(() =>
        sigstore.verifyMerkleInclusion(
          { inclusionProof: { logIndex: String(body.tlog_index), hashes }, canonicalizedBody: k },
          cp2,
        ),
      );
      t.throws(() =>
        sigstore.verifyMerkleInclusion(
          { inclusionProof: { logIndex: String(body.tlog_index), hashes }, canonicalizedBody: treeKeyOf(first[1]!) },
          cp2,
        ),
      );
    }
    const proof = await tree.consistencyProof(300);
    t.ok(
      verifyConsistencyProof({ oldSize: 300, newSize: 305, oldRoot: cp1.logHash, newRoot: cp2.logHash, proof }),
      'the consistency proof from tiles verifies',
    );
    t.same(await tree.rangeHash(0, 300), cp1.logHash, 'the later tiles give the earlier root');

    // No tile and no entry bundle shows a receipt hash.
    const served = Buffer.concat([
      (await app.inject({ method: 'GET', url: '/receipts/tile/0/000' })).rawPayload,
      (await app.inject({ method: 'GET', url: '/receipts/tile/0/001.p/49' })).rawPayload,
      (await app.inject({ method: 'GET', url: '/receipts/tile/1/000.p/1' })).rawPayload,
      (await app.inject({ method: 'GET', url: '/receipts/tile/entries/000' })).rawPayload,
    ]);
    t.notOk(
      [...first, ...second].some((h) => served.includes(Buffer.from(h, 'hex')) || served.includes(Buffer.from(h))),
    );
  },
);

t.test('tiles: full ones immutable, partial ones short-lived, unknown and malformed ones 404', async (t) => {
  const { app, services } = await build(t, { config: { 'ledger.sealIntervalMs': 60_000 } });
  addReceiptedRoute(app);
  await app.ready();
  await receipted(app, 258);
  await services.ledger.sealNow();
  const full = await app.inject({ method: 'GET', url: '/receipts/tile/0/000' });
  t.equal(full.statusCode, 200, 'a full tile');
  t.equal(full.headers['content-type'], 'application/octet-stream');
  t.equal(full.rawPayload.length, 256 * 32);
  t.match(full.headers['cache-control'], /immutable/);
  const partial = await app.inject({ method: 'GET', url: '/receipts/tile/0/001.p/2' });
  t.equal(partial.rawPayload.length, 64);
  t.notMatch(partial.headers['cache-control'], /immutable/);
  const narrower = await app.inject({ method: 'GET', url: '/receipts/tile/0/001.p/1' });
  t.same(narrower.rawPayload, partial.rawPayload.subarray(0, 32), 'a narrower partial tile is its prefix');
  const entries = await app.inject({ method: 'GET', url: '/receipts/tile/entries/001.p/2' });
  t.equal(entries.rawPayload.length, 2 * 34, 'two entries, each a 2-byte length and a 32-byte tree key');
  for (const url of [
    '/receipts/tile/0/001.p/3',
    '/receipts/tile/0/001',
    '/receipts/tile/0/002.p/1',
    '/receipts/tile/2/000.p/1',
    '/receipts/tile/0/1',
    '/receipts/tile/0/x000/001',
    '/receipts/tile/0/000.p/256',
    '/receipts/tile/0/000.p/0',
    '/receipts/tile/64/000',
  ]) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 404, url);
    t.equal(res.json().reason, 'unknown_tile', url);
  }
});

t.test('a rotated note key signs beside the old one for the overlap, then alone', async (t) => {
  const clock = manualClock(Date.now());
  const dataDir = tempDir(t);
  const { app, services } = await build(t, { dataDir, now: clock.now, config: { 'ledger.sealIntervalMs': 60_000 } });
  addReceiptedRoute(app);
  await app.ready();
  const old = await noteKey(app);
  const rotated = await runInProcess(['ledger', 'rotate-note-key', '--data', dataDir, '--overlap-days', '7'], {
    KEYPLANE_MASTER_KEY: TEST_MASTER_KEY,
  });
  t.equal(rotated.code, 0, rotated.stderr);
  const fresh = parseVerifierKey(/new note key: (\S+)/.exec(rotated.stdout)![1]!);
  t.equal(fresh.name, old.name, 'the same name, another key ID');
  await services.ledger.transparency!.noteKeys.reload();

  await receipted(app, 2);
  await services.ledger.sealNow();
  const overlapping = (await app.inject({ method: 'GET', url: '/receipts/checkpoint' })).body;
  t.equal(parseNote(overlapping).signatures.length, 2, 'two signature lines');
  t.doesNotThrow(() => verifyNoteWithSigstore(overlapping, old), 'a verifier that pinned the old key still verifies');
  t.doesNotThrow(() => verifyNoteWithSigstore(overlapping, fresh));
  t.same(
    (await app.inject({ method: 'GET', url: '/receipts/checkpoint/key' })).body.trim().split('\n'),
    [formatVerifierKey(fresh.name, 1, fresh.publicKey), formatVerifierKey(old.name, 1, old.publicKey)],
    'both keys listed, newest first',
  );
  t.same((await noteKey(app)).keyId, fresh.keyId, 'discovery names the new key');

  clock.advance(8 * 86_400_000);
  await receipted(app, 1);
  await services.ledger.sealNow();
  const after = (await app.inject({ method: 'GET', url: '/receipts/checkpoint' })).body;
  t.equal(parseNote(after).signatures.length, 1, 'after the overlap, the new key alone');
  t.throws(() => verifyNoteWithSigstore(after, old));
  t.doesNotThrow(() => verifyNoteWithSigstore(after, fresh));
});
