import t, { type Test as Tap } from 'tap';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { hashLeaf } from '#lib/ledger/merkle-tree.js';
import {
  cosignatureTime,
  formatCheckpoint,
  formatVerifierKey,
  parseCheckpoint,
  parseNote,
  parseVerifierKey,
  rawEd25519PublicKey,
  signNote,
  TiledTree,
  type NoteSigner,
} from '#lib/ledger/transparency/index.js';
import { build, openServices, type Built } from '../../helpers/build.js';
import { runInProcess } from '../../helpers/cli-in-process.js';
import { docCommand } from '../../helpers/doc-examples.js';
import { verifyNoteWithSigstore } from '../../helpers/sigstore-tlog.js';

/** A log of this test's own: leaves held in memory, checkpoints signed with a fresh key. */
function testLog(origin: string) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const signer: NoteSigner = { name: origin, privateKey, publicKey: rawEd25519PublicKey(publicKey) };
  const tree = (leaves: Buffer[]) => {
    const hashes = Buffer.concat(leaves.map(hashLeaf));
    return new TiledTree(leaves.length, async (level, index) => {
      if (level !== 0 || index !== 0) throw new Error('the test trees have fewer than 256 leaves');
      return hashes;
    });
  };
  return {
    signer,
    vkey: formatVerifierKey(origin, 1, signer.publicKey),
    note: async (leaves: Buffer[], by: NoteSigner = signer) =>
      signNote(formatCheckpoint({ origin, size: leaves.length, root: await tree(leaves).root() }), [by]),
    proof: (leaves: Buffer[], oldSize: number) => tree(leaves).consistencyProof(oldSize),
  };
}
const leavesOf = (label: string, n: number) => Array.from({ length: n }, (_, i) => Buffer.from(`${label} ${i}`));
const body = (oldSize: number, proof: Buffer[], note: string) =>
  `old ${oldSize}\n${proof.map((h) => `${h.toString('base64')}\n`).join('')}\n${note}`;
const post = (app: FastifyInstance, payload: string) =>
  app.inject({
    method: 'POST',
    url: '/receipts/add-checkpoint',
    headers: { 'content-type': 'text/plain; charset=utf-8' },
    payload,
  });

t.test(
  'the witness cosigns what extends its view and refuses stale, older, forked, forged and unknown logs',
  async (t) => {
    const log = testLog('example.test/witnessed-log');
    const { app } = await build(t, {
      areas: ['receipts', 'discovery'],
      config: { 'ledger.witness.logs': [{ origin: 'example.test/witnessed-log', key: log.vkey }] },
    });
    const witness = parseVerifierKey((await app.inject({ method: 'GET', url: '/receipts/witness/key' })).body.trim());
    t.equal(witness.name, 'localhost:4400/keyplane/witness');
    const logKey = (await app.inject({ method: 'GET', url: '/receipts/checkpoint/key' })).body.trim();
    t.not(witness.publicKey.toString('hex'), parseVerifierKey(logKey).publicKey.toString('hex'), 'a key apart');

    const L = leavesOf('leaf', 13);
    const n8 = await log.note(L.slice(0, 8));
    const first = await post(app, body(0, [], n8));
    t.equal(first.statusCode, 200, first.body);
    const time = cosignatureTime(parseNote(n8 + first.body), witness);
    t.ok(time !== null, 'a cosignature/v1 by the witness key');

    const n13 = await log.note(L);
    const extended = await post(app, body(8, await log.proof(L, 8), n13));
    t.equal(extended.statusCode, 200, 'a consistent extension is cosigned');
    t.ok(cosignatureTime(parseNote(n13 + extended.body), witness) !== null);

    const stale = await post(app, body(8, await log.proof(L, 8), n13));
    t.equal(stale.statusCode, 409);
    t.match(stale.headers['content-type'], /^text\/x\.tlog\.size/);
    t.equal(stale.body, '13\n', 'the size the witness holds');

    const older = await post(app, body(13, [], await log.note(L.slice(0, 8))));
    t.equal(older.statusCode, 400);
    t.equal(older.json().reason, 'checkpoint_older');

    const other = leavesOf('other', 16);
    const forked = await post(app, body(13, await log.proof(other, 13), await log.note(other)));
    t.equal(forked.statusCode, 422);
    t.equal(forked.json().reason, 'inconsistent_checkpoint');
    const sameSize = await post(app, body(13, [], await log.note(other.slice(0, 13))));
    t.equal(sameSize.statusCode, 409);
    t.equal(sameSize.json().reason, 'checkpoint_conflict');

    const impostor = testLog('example.test/witnessed-log');
    const forged = await post(app, body(13, [], await log.note(L, impostor.signer)));
    t.equal(forged.statusCode, 403);
    t.equal(forged.json().reason, 'checkpoint_not_signed');
    const garbled = n13.replace(/ ([A-Za-z0-9+/]{8})[A-Za-z0-9+/]{8}/, (_m, keep: string) => ` ${keep}AAAAAAAA`);
    t.equal((await post(app, body(13, [], garbled))).statusCode, 403, "the log's key ID with a bad signature");

    const stranger = testLog('example.test/another-log');
    const unknown = await post(app, body(0, [], await stranger.note(L)));
    t.equal(unknown.statusCode, 404);
    t.equal(unknown.json().reason, 'unknown_log');

    for (const [what, payload] of [
      ['no blank line', 'old 0\n'],
      ['a negative size', body(-1, [], n13)],
      ['a short proof hash', `old 8\nAAAA\n\n${n13}`],
      [
        '64 proof hashes',
        body(
          8,
          Array.from({ length: 64 }, () => randomBytes(32)),
          n13,
        ),
      ],
      ['a note without signatures', body(13, [], formatCheckpoint({ origin: 'x', size: 1, root: randomBytes(32) }))],
    ] as const) {
      const res = await post(app, payload);
      t.equal(res.statusCode, 400, what);
    }
    const huge = await post(app, body(13, [], n13) + 'x'.repeat(20_000));
    t.equal(huge.statusCode, 413, 'bodies are capped');
    t.equal((await app.inject({ method: 'GET', url: '/receipts/add-checkpoint' })).statusCode, 404);
  },
);

t.test('two requests racing from the same old size: one is cosigned, the other told the new size', async (t) => {
  const log = testLog('example.test/raced-log');
  const { app, services } = await build(t, {
    areas: ['receipts'],
    config: { 'ledger.witness.logs': [{ origin: 'example.test/raced-log', key: log.vkey }] },
  });
  const L = leavesOf('leaf', 20);
  t.equal((await post(app, body(0, [], await log.note(L.slice(0, 4))))).statusCode, 200);
  const a = body(4, await log.proof(L.slice(0, 10), 4), await log.note(L.slice(0, 10)));
  const b = body(4, await log.proof(L, 4), await log.note(L));
  const answers = await Promise.all([post(app, a), post(app, b)]);
  t.same(answers.map((r) => r.statusCode).sort(), [200, 409]);
  const held = await services.storage.tlog.witnessed('example.test/raced-log');
  const lost = answers.find((r) => r.statusCode === 409)!;
  t.equal(lost.body, `${held!.size}\n`);
  t.ok([10, 20].includes(held!.size));
  // The store's update is conditional: moving from a size no longer held changes nothing.
  t.equal(await services.storage.tlog.advanceWitnessed('example.test/raced-log', 4, 30, randomBytes(32), 0), false);
});

t.test('checkpoints are throttled per origin; an instance that witnesses no log answers 404', async (t) => {
  const log = testLog('example.test/busy-log');
  const { app } = await build(t, {
    areas: ['receipts'],
    config: {
      'ledger.witness.logs': [{ origin: 'example.test/busy-log', key: log.vkey }],
      'ledger.witness.perOriginPerMinute': 2,
    },
  });
  const note = await log.note(leavesOf('leaf', 3));
  t.equal((await post(app, body(0, [], note))).statusCode, 200);
  t.equal((await post(app, body(3, [], note))).statusCode, 200);
  const third = await post(app, body(3, [], note));
  t.equal(third.statusCode, 429);
  t.equal(third.json().reason, 'rate_limited');

  const { app: none } = await build(t, { areas: ['receipts'] });
  const res = await post(none, body(0, [], note));
  t.equal(res.statusCode, 404);
  t.equal(res.json().reason, 'unknown_log');
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Keys of a data dir's instance, made by opening its services once. */
async function keysOf(t: Tap, dataDir: string, issuer: string) {
  const { services } = await openServices(t, { dataDir, config: { issuer } });
  const log = services.ledger.transparency!;
  const keys = { log: log.noteKeys.logVerifierKeys()[0]!, witness: log.noteKeys.witness().vkey, origin: log.origin };
  await services.close();
  return keys;
}

async function receipted(built: Built, n: number): Promise<string[]> {
  const hashes: string[] = [];
  for (let i = 0; i < n; i++) {
    const { receipt } = await built.services.storage.transaction((tx) =>
      built.services.events.record(tx, {
        type: 'keys.rotated',
        at: built.services.now(),
        outcome: 'success',
        kid: `k-${randomBytes(4).toString('hex')}`,
        retired: null,
      }),
    );
    hashes.push(receipt!);
  }
  await built.services.ledger.sealNow();
  await built.services.ledger.transparency!.settle();
  return hashes;
}

t.test(
  'two instances witness each other; a rewritten receipt forks the log, and the witness and `keyplane receipt verify --witnesses` refuse it',
  async (t) => {
    const [portA, portB] = [await freePort(), await freePort()];
    const [issuerA, issuerB] = [`http://localhost:${portA}`, `http://localhost:${portB}`];
    const [dirA, dirB] = [tempDirOf(t), tempDirOf(t)];
    const [keysA, keysB] = [await keysOf(t, dirA, issuerA), await keysOf(t, dirB, issuerB)];
    const witnessName = (vkey: string) => vkey.slice(0, vkey.indexOf('+'));
    const config = (self: string, peer: typeof keysA, peerUrl: string) => ({
      issuer: self,
      'ledger.sealIntervalMs': 60_000,
      'ledger.witnesses': [{ name: witnessName(peer.witness), url: `${peerUrl}/receipts`, key: peer.witness }],
      'ledger.witness.logs': [{ origin: peer.origin, key: peer.log }],
    });
    const A = await build(t, {
      areas: ['receipts', 'discovery'],
      dataDir: dirA,
      config: config(issuerA, keysB, issuerB),
    });
    const B = await build(t, {
      areas: ['receipts', 'discovery'],
      dataDir: dirB,
      config: config(issuerB, keysA, issuerA),
    });
    await A.app.listen({ port: portA, host: '127.0.0.1' });
    await B.app.listen({ port: portB, host: '127.0.0.1' });

    const [hashA] = await receipted(A, 3);
    const [hashB] = await receipted(B, 2);
    await receipted(A, 2);
    const witnessB = parseVerifierKey(keysB.witness);
    const noteA = parseNote((await A.app.inject({ method: 'GET', url: '/receipts/checkpoint' })).body);
    t.ok(cosignatureTime(noteA, witnessB) !== null, "A's checkpoint carries B's cosignature");
    t.equal(parseCheckpoint(noteA.text).size, 5, 'cosigned again after it grew, from a consistency proof');
    const noteB = parseNote((await B.app.inject({ method: 'GET', url: '/receipts/checkpoint' })).body);
    t.ok(cosignatureTime(noteB, parseVerifierKey(keysA.witness)) !== null, "B's checkpoint carries A's");
    const served = (await A.app.inject({ method: 'GET', url: '/receipts/checkpoint' })).body;
    t.doesNotThrow(
      () => verifyNoteWithSigstore(served, parseVerifierKey(keysA.log)),
      'sigstore-js reads the cosigned note',
    );

    const verify = (hash: string, n: string, ...keys: string[]) =>
      runInProcess([
        'receipt',
        'verify',
        hash,
        '--control-plane',
        issuerA,
        '--witnesses',
        n,
        ...keys.flatMap((k) => ['--witness-key', k]),
      ]);
    const good = await verify(hashA!, '1', keysB.witness);
    t.equal(good.code, 0, good.stdout + good.stderr);
    t.match(good.stdout, /cosigned by localhost:\d+\/keyplane\/witness/);
    // docs/ledger.md's command as written: B trusted, A's own witness named too, A's note key pinned.
    const asWritten = await runInProcess(
      docCommand(
        'docs/ledger.md',
        'keyplane receipt verify HASH --control-plane URL --witnesses N --witness-key VKEY [--witness-key VKEY …] [--log-key VKEY]',
        {
          '--witness-key VKEY [--witness-key VKEY …]': `--witness-key ${keysB.witness} [--witness-key ${keysA.witness} …]`,
          '--log-key VKEY': `--log-key ${keysA.log}`,
          HASH: hashA!,
          URL: issuerA,
          N: '1',
        },
      ).args,
    );
    t.equal(asWritten.code, 0, asWritten.stdout + asWritten.stderr);
    t.match(asWritten.stdout, /cosigned by localhost:\d+\/keyplane\/witness/);
    const tooFew = await verify(hashA!, '2', keysB.witness, keysA.witness);
    t.equal(tooFew.code, 1, 'two witnesses asked, one cosigned');
    t.equal((await verify(hashA!, '1')).code, 2, 'no witness key named: a usage error');
    t.equal(
      (
        await runInProcess([
          'receipt',
          'verify',
          hashB!,
          '--control-plane',
          issuerB,
          '--witnesses',
          '1',
          '--witness-key',
          keysA.witness,
        ])
      ).code,
      0,
    );

    // Rewrite history at A: the leaf of its first receipt in the stored tiles, as a rewritten receipt would be.
    const tile = (await A.services.storage.tlog.tile(0, 0))!;
    const rewritten = Buffer.concat([hashLeaf(randomBytes(32)), tile.subarray(32)]);
    await A.services.storage.tlog.putTiles([{ level: 0, index: 0, hashes: rewritten }]);
    const [hashLater] = await receipted(A, 2);
    const forkedNote = (await A.app.inject({ method: 'GET', url: '/receipts/checkpoint' })).body;
    t.equal(cosignatureTime(parseNote(forkedNote), witnessB), null, 'the witness did not cosign the fork');
    t.equal(parseCheckpoint(parseNote(forkedNote).text).size, 7);
    const tiles = new TiledTree(7, async (level, index) => (await A.services.storage.tlog.tile(level, index))!);
    const refused = await B.app.inject({
      method: 'POST',
      url: '/receipts/add-checkpoint',
      headers: { 'content-type': 'text/plain' },
      payload: body(5, await tiles.consistencyProof(5), forkedNote),
    });
    t.equal(refused.statusCode, 422, 'B refuses the forked checkpoint');
    const forkVerdict = await verify(hashLater!, '1', keysB.witness);
    t.equal(forkVerdict.code, 1, forkVerdict.stdout);
    t.match(forkVerdict.stdout, /cosigned by 0 of the named witnesses/);
  },
);

function tempDirOf(t: Tap): string {
  const dir = mkdtempSync(join(tmpdir(), 'keyplane-witness-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
