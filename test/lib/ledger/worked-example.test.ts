import t from 'tap';
import { createLocalJWKSet } from 'jose';
import { buildAbsenceProof, verifyAbsenceProof } from '#lib/ledger/absence.js';
import { canonicalJson } from '#lib/ledger/canonical-json.js';
import { verifyCheckpoint } from '#lib/ledger/checkpoint.js';
import { auditPath, buildSortedMerkleTree, hashLeaf, toHex, treeRoot } from '#lib/ledger/merkle-tree.js';
import { hashReceipt, treeKeyOf } from '#lib/ledger/receipt.js';
import { verifyReceiptProof } from '#lib/ledger/verify-receipt.js';

// Every value of the worked example in docs/ledger.md.
const receipts = [
  {
    kind: 'session.started',
    at: '2026-11-22T12:00:00.000Z',
    outcome: 'success',
    nonce: '5f1c0e9a4b7d2c8e1a3f6b9d0c2e4a68',
    identityId: 'idn_q3Lr2bV1xUeH0mKc8sT4yA',
    sessionId: 'ses_Z1n8cJ4fW0pQ7kRt2hM5gB',
    deviceId: 'dev_H2s9dL3vN6xB1qP8wE4rT0',
    method: 'passkey',
    assurance: 'passkey',
  },
  {
    kind: 'totp.enabled',
    at: '2026-11-22T12:00:00.250Z',
    outcome: 'success',
    nonce: '0b8e2d4f6a1c3e5b7d9f1a3c5e7b9d0f',
    identityId: 'idn_q3Lr2bV1xUeH0mKc8sT4yA',
    sessionId: 'ses_Z1n8cJ4fW0pQ7kRt2hM5gB',
  },
  {
    kind: 'keys.rotated',
    at: '2026-11-22T12:00:00.600Z',
    outcome: 'success',
    nonce: 'c4a2e6f8b0d1c3e5a7f9b1d3e5c7a9f0',
    kid: 'kNqMLyUKNBMNBLYaFNR2WfNiUBGiLzopHeACFs01MVE',
    retired: null,
  },
];
const HASHES = [
  '7a7e5ad99b00e263ede94b5e7aab7f762cc5c7c61fabb96727951fef1151702b',
  '7d4da0b29e85b427194428865301f334532bcaf8e767d57f1668ce64b0e15da9',
  '709af89f2ffa6a9bc7d355dd11da488e1cfa6854a889522b842e0c56f6823ed4',
];
const KEYS = [
  'a816cd902daa130acc8ff79a405c45ef34e3c2ecc63bfc6b3473a26d9b71d687',
  '6bafbe769c7406f79c7de80cee9149e68c7eecbb08c0e2032c8effcb1d070551',
  'a2ccf9687547f40219186fad887dacee0b03cb444590feaffb5eef0bedf4ce12',
];
const LEAVES = [
  '609e0bd2812bb500d3dea36912a6fcb077ee6987938bb4535da25e2a82a92537',
  'e2fc56e00a08812a2a784fb885518356de9da1eefb01b38caca1e4f7a2b426ce',
  'aeae1043eb4df392dfea3492f120820810564bd3c0277cb2e1cc6c8ab3277d3c',
];
const ROOT = '57cc1d2908f29ad7e0c8a7e54bc86625834211296160512a5d1ed57ab9c58701';
const N01 = 'a8c4feeca59231ff7b9430b77478144d18d8412a4d7b455d20171bdbc60d0429';
const CHECKPOINT =
  'eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUta2lkIiwidHlwIjoia2V5cGxhbmUtY2hlY2twb2ludCtqd3QifQ.eyJhdCI6IjIwMjYtMTEtMjJUMTI6MDA6MDEuMDAwWiIsImVwb2NoIjoxLCJwcmV2IjpudWxsLCJyb290IjoiNTdjYzFkMjkwOGYyOWFkN2UwYzhhN2U1NGJjODY2MjU4MzQyMTEyOTYxNjA1MTJhNWQxZWQ1N2FiOWM1ODcwMSIsInNpemUiOjN9.sUiqHA_DtYSJTF7VbJQ27v-QoFbC0-5EpEznLMqV-MEiiNT03wg2Gtx8nZgMDn2DBoheVvr49Z9WgpcAGABkhg';
const JWK = {
  kty: 'EC',
  crv: 'P-256',
  x: '_cPxOjYjpw5ZCwGgINzGfzuCqncwkVyC6fKRj_itqrg',
  y: 'IcgHhmRFFSKyrxFkzdw2RtG5uZy6Eg4KpU7D5RwtWQQ',
  kid: 'example-kid',
  alg: 'ES256',
  use: 'sig',
};

t.test('the worked example of docs/ledger.md holds', async (t) => {
  t.equal(
    canonicalJson(receipts[0]),
    '{"assurance":"passkey","at":"2026-11-22T12:00:00.000Z","deviceId":"dev_H2s9dL3vN6xB1qP8wE4rT0","identityId":"idn_q3Lr2bV1xUeH0mKc8sT4yA","kind":"session.started","method":"passkey","nonce":"5f1c0e9a4b7d2c8e1a3f6b9d0c2e4a68","outcome":"success","sessionId":"ses_Z1n8cJ4fW0pQ7kRt2hM5gB"}',
  );
  t.same(
    receipts.map((r) => hashReceipt(r)),
    HASHES,
  );
  t.same(
    HASHES.map((h) => toHex(treeKeyOf(h))),
    KEYS,
  );
  t.same(
    KEYS.map((k) => toHex(hashLeaf(Buffer.from(k, 'hex')))),
    LEAVES,
  );
  const tree = buildSortedMerkleTree(KEYS.map((k) => Buffer.from(k, 'hex')));
  t.same(tree.keys.map(toHex), [KEYS[1], KEYS[2], KEYS[0]]);
  t.equal(toHex(treeRoot(tree)), ROOT);
  t.same(auditPath(tree, 2).map(toHex), [N01]);
  const jwks = createLocalJWKSet({ keys: [JWK] });
  t.same(await verifyCheckpoint(CHECKPOINT, jwks), {
    at: '2026-11-22T12:00:01.000Z',
    epoch: 1,
    prev: null,
    root: ROOT,
    size: 3,
  });
  t.equal(
    (
      await verifyReceiptProof(
        {
          hash: HASHES[0]!,
          receipt: receipts[0],
          proof: { epoch: 1, index: 2, size: 3, path: [N01] },
          checkpoint: CHECKPOINT,
        },
        jwks,
      )
    ).ok,
    true,
  );
  const probe = treeKeyOf('ab'.repeat(32));
  t.equal(toHex(probe), '3b6a89e4853f9af549db62024bb20b80cdff6f7320646e02ee0f6ec8d79a1e8d');
  const absence = buildAbsenceProof(tree, probe)!;
  t.same(absence, { size: 3, left: null, right: { index: 0, key: KEYS[1], path: [LEAVES[2], LEAVES[0]] } });
  t.ok(verifyAbsenceProof({ key: probe, proof: absence, root: ROOT, size: 3 }));
});
