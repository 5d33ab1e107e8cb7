import t from 'tap';
import { generateKeyPair, exportJWK, createLocalJWKSet, CompactSign } from 'jose';
import {
  CHECKPOINT_TYP,
  buildCheckpointPayload,
  checkpointHash,
  decodeCheckpoint,
  isPreviousCheckpoint,
  signCheckpoint,
  verifyCheckpoint,
} from '#lib/ledger/checkpoint.js';
import { verifyReceiptProof } from '#lib/ledger/verify-receipt.js';
import { auditPath, buildSortedMerkleTree, toHex, treeRoot } from '#lib/ledger/merkle-tree.js';
import { hashReceipt, treeKeyOf } from '#lib/ledger/receipt.js';

async function keyPair(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  return { kid, privateKey, jwk };
}

const NOW = Date.parse('2026-11-22T12:00:00Z');
const ROOT = 'ab'.repeat(32);

t.test('signs a checkpoint with kid and typ and chains it by prev', async (t) => {
  const key = await keyPair('k1');
  const jwks = createLocalJWKSet({ keys: [key.jwk] });
  const first = await signCheckpoint(
    buildCheckpointPayload({ epoch: 1, root: ROOT, size: 3, previous: null, now: NOW }),
    key,
  );
  const decoded = decodeCheckpoint(first);
  t.equal(decoded.kid, 'k1');
  t.same(decoded.payload, { epoch: 1, root: ROOT, size: 3, prev: null, at: '2026-11-22T12:00:00.000Z' });
  t.same(await verifyCheckpoint(first, jwks), decoded.payload);
  const header = JSON.parse(Buffer.from(first.split('.')[0]!, 'base64url').toString());
  t.same(header, { alg: 'ES256', kid: 'k1', typ: CHECKPOINT_TYP });

  const second = await signCheckpoint(
    buildCheckpointPayload({ epoch: 2, root: ROOT, size: 1, previous: first, now: NOW + 1000 }),
    key,
  );
  const p2 = await verifyCheckpoint(second, jwks);
  t.equal(p2.prev, checkpointHash(first));
  t.ok(isPreviousCheckpoint(p2, first, decoded.payload));
  t.notOk(isPreviousCheckpoint(p2, second, p2));
  t.throws(() => buildCheckpointPayload({ epoch: 2, root: ROOT, size: 1, previous: null, now: NOW }), {
    code: 'invalid_checkpoint',
  });
  t.throws(() => buildCheckpointPayload({ epoch: 1, root: ROOT, size: 1, previous: first, now: NOW }), {
    code: 'invalid_checkpoint',
  });
});

t.test('refuses a checkpoint signed by an unknown key, altered, or of the wrong shape', async (t) => {
  const key = await keyPair('k1');
  const other = await keyPair('k1');
  const jwks = createLocalJWKSet({ keys: [key.jwk] });
  const good = await signCheckpoint(
    buildCheckpointPayload({ epoch: 1, root: ROOT, size: 3, previous: null, now: NOW }),
    key,
  );
  await t.rejects(
    verifyCheckpoint(
      await signCheckpoint(buildCheckpointPayload({ epoch: 1, root: ROOT, size: 3, previous: null, now: NOW }), other),
      jwks,
    ),
    { code: 'invalid_checkpoint' },
    'another key under the same kid',
  );
  const [h, , s] = good.split('.');
  const forged = `${h}.${Buffer.from(JSON.stringify({ epoch: 1, root: ROOT, size: 4, prev: null, at: '2026-11-22T12:00:00.000Z' })).toString('base64url')}.${s}`;
  await t.rejects(verifyCheckpoint(forged, jwks), { code: 'invalid_checkpoint' }, 'an altered payload');
  const sign = (header: Record<string, unknown>, payload: unknown) =>
    new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
      .setProtectedHeader({ alg: 'ES256', ...header })
      .sign(key.privateKey);
  const base = { epoch: 1, root: ROOT, size: 3, prev: null, at: '2026-11-22T12:00:00Z' };
  await t.rejects(verifyCheckpoint(await sign({ kid: 'k1' }, base), jwks), { code: 'invalid_checkpoint' }, 'no typ');
  await t.rejects(
    verifyCheckpoint(await sign({ kid: 'k1', typ: CHECKPOINT_TYP }, { ...base, extra: 1 }), jwks),
    { code: 'invalid_checkpoint' },
    'an extra field',
  );
  await t.rejects(
    verifyCheckpoint(await sign({ kid: 'k1', typ: CHECKPOINT_TYP }, { ...base, epoch: 2 }), jwks),
    { code: 'invalid_checkpoint' },
    'epoch 2 without prev',
  );
  await t.rejects(
    verifyCheckpoint(await sign({ kid: 'k1', typ: CHECKPOINT_TYP }, { ...base, root: ROOT.toUpperCase() }), jwks),
    { code: 'invalid_checkpoint' },
    'upper-case root',
  );
  await t.rejects(
    verifyCheckpoint(await sign({ kid: 'k1', typ: CHECKPOINT_TYP }, { ...base, at: 'yesterday' }), jwks),
    { code: 'invalid_checkpoint' },
    'a bad time',
  );
  t.ok(
    await verifyCheckpoint(await sign({ kid: 'k1', typ: CHECKPOINT_TYP }, base), jwks),
    'a hand-made well-formed checkpoint verifies',
  );
  await t.rejects(verifyCheckpoint('a.b', jwks), { code: 'invalid_checkpoint' });
});

t.test('verifies a receipt end to end and names what fails', async (t) => {
  const key = await keyPair('k1');
  const jwks = createLocalJWKSet({ keys: [key.jwk] });
  const receipts = [1, 2, 3].map((n) => ({
    kind: 'test.event',
    at: '2026-11-22T12:00:00.000Z',
    outcome: 'success',
    n,
  }));
  const hashes = receipts.map((r) => hashReceipt(r));
  const tree = buildSortedMerkleTree(hashes.map((h) => treeKeyOf(h)));
  const checkpoint = await signCheckpoint(
    buildCheckpointPayload({ epoch: 1, root: toHex(treeRoot(tree)), size: 3, previous: null, now: NOW }),
    key,
  );
  const index = tree.keys.findIndex((k) => k.equals(treeKeyOf(hashes[1]!)));
  const proof = { epoch: 1, index, size: 3, path: auditPath(tree, index).map(toHex) };
  const input: { hash: string; receipt: unknown; proof: typeof proof; checkpoint: string } = {
    hash: hashes[1]!,
    receipt: receipts[1],
    proof,
    checkpoint,
  };
  t.same(await verifyReceiptProof(input, jwks), { ok: true, checkpoint: decodeCheckpoint(checkpoint).payload });
  const refused = async (name: string, changed: Partial<typeof input>) => {
    const verdict = await verifyReceiptProof({ ...input, ...changed }, jwks);
    t.equal(verdict.ok, false, name);
  };
  await refused('another receipt', { receipt: receipts[0] });
  await refused('an altered receipt', { receipt: { ...receipts[1], n: 9 } });
  await refused('another hash', { hash: hashes[0]! });
  await refused('another index', { proof: { ...proof, index: (index + 1) % 3 } });
  await refused('another size', { proof: { ...proof, size: 4 } });
  await refused('another epoch', { proof: { ...proof, epoch: 2 } });
  await refused('an altered path', {
    proof: { ...proof, path: proof.path.map((p) => p.replace(/^./, (c) => (c === '0' ? '1' : '0'))) },
  });
  await refused('a checkpoint from an unknown key', {
    checkpoint: await signCheckpoint(decodeCheckpoint(checkpoint).payload, await keyPair('k2')),
  });
  await refused('a malformed hash', { hash: 'xyz' });
});
