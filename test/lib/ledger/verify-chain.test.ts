import t from 'tap';
import { createLocalJWKSet, exportJWK, generateKeyPair } from 'jose';
import { auditEpoch } from '#lib/ledger/audit-epoch.js';
import { canonicalJson } from '#lib/ledger/canonical-json.js';
import { buildCheckpointPayload, signCheckpoint } from '#lib/ledger/checkpoint.js';
import { buildSortedMerkleTree, toHex, treeRoot } from '#lib/ledger/merkle-tree.js';
import { hashReceipt, treeKeyOf } from '#lib/ledger/receipt.js';
import { verifyCheckpointChain } from '#lib/ledger/verify-chain.js';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const ROOT = 'ab'.repeat(32);

async function keyPair(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

async function chain(key: Awaited<ReturnType<typeof keyPair>>, length: number, root = ROOT): Promise<string[]> {
  const out: string[] = [];
  for (let epoch = 1; epoch <= length; epoch++) {
    out.push(
      await signCheckpoint(
        buildCheckpointPayload({ epoch, root, size: 1, previous: out.at(-1) ?? null, now: NOW + epoch }),
        key,
      ),
    );
  }
  return out;
}

t.test('follows a chain back from either end to the pinned checkpoint', async (t) => {
  const key = await keyPair('k1');
  const jwks = createLocalJWKSet({ keys: [key.jwk] });
  const served = await chain(key, 4);
  const get = async (epoch: number) => served[epoch - 1]!;
  t.same(await verifyCheckpointChain(served[0]!, served[3]!, get, jwks), { ok: true, followed: [3, 2, 1] });
  t.same(
    await verifyCheckpointChain(served[3]!, served[1]!, get, jwks),
    { ok: true, followed: [3, 2] },
    'order of the two does not matter',
  );
  t.same(
    await verifyCheckpointChain(served[2]!, served[2]!, get, jwks),
    { ok: true, followed: [] },
    'a checkpoint is on its own chain',
  );
});

t.test('refuses a fork, a broken prev link, an unsigned link and malformed input', async (t) => {
  const key = await keyPair('k1');
  const jwks = createLocalJWKSet({ keys: [key.jwk] });
  const served = await chain(key, 3);
  const get = async (epoch: number) => served[epoch - 1]!;

  const forked = await chain(key, 1, 'cd'.repeat(32));
  const fork = await verifyCheckpointChain(forked[0]!, served[2]!, get, jwks);
  t.match(
    fork,
    { ok: false, followed: [2, 1], failure: /fork/ },
    'the pinned epoch 1 is not the one the chain reaches',
  );

  const other = await chain(key, 2, 'ef'.repeat(32));
  const broken = await verifyCheckpointChain(
    served[0]!,
    served[2]!,
    async (epoch) => (epoch === 2 ? other[1]! : served[epoch - 1]!),
    jwks,
  );
  t.match(
    broken,
    { ok: false, followed: [2], failure: /prev of epoch 3/ },
    'epoch 2 served is not the one epoch 3 names',
  );

  const stranger = await keyPair('k1');
  const strangers = await chain(stranger, 2);
  const unsigned = await verifyCheckpointChain(
    served[0]!,
    served[2]!,
    async (epoch) => (epoch === 2 ? strangers[1]! : served[epoch - 1]!),
    jwks,
  );
  t.match(unsigned, { ok: false, followed: [], failure: /^checkpoint 2: / }, 'a link signed by another key');

  t.match(await verifyCheckpointChain('a.b', served[2]!, get, jwks), { ok: false, followed: [] }, 'not a checkpoint');
  await t.rejects(
    verifyCheckpointChain(
      served[0]!,
      served[2]!,
      async () => {
        throw new Error('network down');
      },
      jwks,
    ),
    /network down/,
    'a fetch failure is not a verdict',
  );
});

t.test('audits an epoch from its stored receipts', async (t) => {
  const receipts = [1, 2, 3].map((n) => ({
    kind: 'test.event',
    at: '2026-11-22T12:00:00.000Z',
    outcome: 'success',
    n,
  }));
  const rows = receipts.map((r) => ({ hash: hashReceipt(r), body: canonicalJson(r) }));
  const root = toHex(treeRoot(buildSortedMerkleTree(rows.map((r) => treeKeyOf(r.hash)))));
  t.same(auditEpoch({ receipts: rows, root, size: 3 }), { ok: true, root });

  const edited = rows.map((r, i) =>
    i === 1 ? { ...r, body: canonicalJson({ ...receipts[1], outcome: 'failure' }) } : r,
  );
  const audit = auditEpoch({ receipts: edited, root, size: 3 });
  t.equal(audit.ok, false);
  t.match(
    audit,
    { problems: [/^root differs/, new RegExp(`^receipt ${rows[1]!.hash} now hashes to`)] },
    'an edited receipt changes its hash and the root',
  );

  t.match(
    auditEpoch({
      receipts: rows.map((r, i) => (i === 0 ? { ...r, body: JSON.stringify(receipts[0], null, 1) } : r)),
      root,
      size: 3,
    }),
    { ok: false, problems: [/not stored in canonical form/] },
    'same hash, other bytes',
  );
  t.match(auditEpoch({ receipts: rows.map((r, i) => (i === 0 ? { ...r, body: '{' } : r)), root, size: 3 }), {
    ok: false,
    problems: [/root differs/, /is not JSON/, /now hashes to/],
  });
  t.match(
    auditEpoch({ receipts: rows, root, size: 4 }),
    { ok: false, problems: [/^size differs/] },
    'a receipt missing from the store',
  );
  t.match(auditEpoch({ receipts: [...rows, rows[0]!], root, size: 4 }), {
    ok: false,
    problems: ['two receipts share a tree key'],
  });
});
