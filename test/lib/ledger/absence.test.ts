import t from 'tap';
import { randomBytes } from 'node:crypto';
import { buildAbsenceProof, verifyAbsenceProof } from '#lib/ledger/absence.js';
import { EMPTY_TREE_ROOT, buildSortedMerkleTree, treeRoot } from '#lib/ledger/merkle-tree.js';

const key = (hex: string) => Buffer.from(hex.padEnd(64, '0'), 'hex');

t.test('proves the absence of a key between two neighbours', async (t) => {
  const tree = buildSortedMerkleTree([key('10'), key('20'), key('30'), key('40'), key('50')]);
  const root = treeRoot(tree);
  const proof = buildAbsenceProof(tree, key('25'))!;
  t.equal(proof.left!.index, 1);
  t.equal(proof.right!.index, 2);
  t.ok(verifyAbsenceProof({ key: key('25'), proof, root, size: 5 }));
  t.notOk(
    verifyAbsenceProof({ key: key('35'), proof, root, size: 5 }),
    'the same neighbours do not bracket another key',
  );
  t.notOk(
    verifyAbsenceProof({ key: key('25'), proof, root: treeRoot(buildSortedMerkleTree([key('10')])), size: 5 }),
    'another root',
  );
  t.notOk(verifyAbsenceProof({ key: key('25'), proof, root, size: 6 }), "a size other than the checkpoint's");
});

t.test('handles a key before the first, after the last, and the empty epoch', async (t) => {
  const tree = buildSortedMerkleTree([key('10'), key('20'), key('30')]);
  const root = treeRoot(tree);
  const before = buildAbsenceProof(tree, key('05'))!;
  t.equal(before.left, null);
  t.equal(before.right!.index, 0);
  t.ok(verifyAbsenceProof({ key: key('05'), proof: before, root, size: 3 }));
  const after = buildAbsenceProof(tree, key('ff'))!;
  t.equal(after.right, null);
  t.equal(after.left!.index, 2);
  t.ok(verifyAbsenceProof({ key: key('ff'), proof: after, root, size: 3 }));
  t.notOk(
    verifyAbsenceProof({ key: key('15'), proof: before, root, size: 3 }),
    'a key after the first is not proved absent by the first alone',
  );
  t.notOk(
    verifyAbsenceProof({ key: key('25'), proof: after, root, size: 3 }),
    'a key before the last is not proved absent by the last alone',
  );
  const empty = buildAbsenceProof(buildSortedMerkleTree([]), key('42'))!;
  t.same(empty, { size: 0, left: null, right: null });
  t.ok(verifyAbsenceProof({ key: key('42'), proof: empty, root: EMPTY_TREE_ROOT, size: 0 }));
  t.notOk(
    verifyAbsenceProof({ key: key('42'), proof: empty, root, size: 0 }),
    'an empty proof against a non-empty root',
  );
  t.notOk(
    verifyAbsenceProof({ key: key('42'), proof: { size: 3, left: null, right: null }, root, size: 3 }),
    'no neighbours in a non-empty tree',
  );
});

t.test('returns no absence proof for a present key', async (t) => {
  const tree = buildSortedMerkleTree([key('10'), key('20')]);
  t.equal(buildAbsenceProof(tree, key('20')), null);
});

t.test('refuses neighbours that are not adjacent, or a present key claimed absent', async (t) => {
  const keys = Array.from({ length: 50 }, () => randomBytes(32));
  const tree = buildSortedMerkleTree(keys);
  const root = treeRoot(tree);
  const probe = randomBytes(32);
  const proof = buildAbsenceProof(tree, probe);
  t.ok(proof && verifyAbsenceProof({ key: probe, proof, root, size: 50 }), 'a random absent key');
  // Skip a leaf: neighbours at i-1 and i+1 around the present key i.
  const i = 20;
  const gap = {
    size: 50,
    left: buildAbsenceProof(tree, Buffer.concat([tree.keys[i - 1]!, Buffer.from([0])]))!.left,
    right: buildAbsenceProof(tree, Buffer.concat([tree.keys[i]!, Buffer.from([0])]))!.right,
  };
  t.equal(gap.right!.index, i + 1);
  t.notOk(
    verifyAbsenceProof({ key: tree.keys[i]!, proof: gap, root, size: 50 }),
    'a present key cannot be proved absent',
  );
  // Lie about an index.
  const lied = {
    ...proof!,
    right: proof!.right ? { ...proof!.right, index: proof!.right.index + 1 } : null,
    left: proof!.left ? { ...proof!.left, index: proof!.left.index + 1 } : null,
  };
  t.notOk(verifyAbsenceProof({ key: probe, proof: lied, root, size: 50 }), 'shifted indices');
  t.notOk(verifyAbsenceProof({ key: 'not hex', proof: proof!, root, size: 50 }), 'a malformed key');
});
