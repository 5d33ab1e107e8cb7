import t from 'tap';
import { createHash } from 'node:crypto';
import {
  EMPTY_TREE_ROOT,
  auditPath,
  buildMerkleTree,
  buildSortedMerkleTree,
  hashChildren,
  hashLeaf,
  indexOfKey,
  rootFromInclusionProof,
  treeRoot,
  verifyInclusionProof,
} from '#lib/ledger/merkle-tree.js';

// RFC 6962 / RFC 9162 test tree (certificate-transparency; transparency-dev/merkle testonly).
const LEAF_INPUTS = [
  '',
  '00',
  '10',
  '2021',
  '3031',
  '40414243',
  '5051525354555657',
  '606162636465666768696a6b6c6d6e6f',
];
const ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
// (0-based index, size, path) from the same test tree.
const INCLUSION = [
  { index: 0, size: 1, path: [] as string[] },
  {
    index: 0,
    size: 8,
    path: [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  },
  {
    index: 5,
    size: 8,
    path: [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
  { index: 2, size: 3, path: ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125'] },
  {
    index: 1,
    size: 5,
    path: [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  },
];
const leaves = LEAF_INPUTS.map((h) => Buffer.from(h, 'hex'));
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** MTH straight from RFC 9162 §2.1.1, recursive, as an independent reference. */
function referenceRoot(d: Buffer[]): Buffer {
  if (d.length === 0) return createHash('sha256').digest();
  if (d.length === 1)
    return createHash('sha256')
      .update(Buffer.from([0]))
      .update(d[0]!)
      .digest();
  let k = 1;
  while (k * 2 < d.length) k *= 2;
  return createHash('sha256')
    .update(Buffer.from([1]))
    .update(referenceRoot(d.slice(0, k)))
    .update(referenceRoot(d.slice(k)))
    .digest();
}

/** A small seeded generator so property failures reproduce. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function randomKeys(n: number, rand: () => number): Buffer[] {
  return Array.from({ length: n }, () => Buffer.from(Array.from({ length: 32 }, () => Math.floor(rand() * 256))));
}

t.test('reproduces the RFC 6962 test tree roots for sizes 0 to 8', async (t) => {
  for (let n = 0; n <= 8; n++) {
    t.equal(hex(treeRoot(buildMerkleTree(leaves.slice(0, n)))), ROOTS[n], `size ${n}`);
    // The vector inputs happen to be in ascending byte order, so the sorted tree is the same tree.
    t.equal(hex(treeRoot(buildSortedMerkleTree(leaves.slice(0, n)))), ROOTS[n], `sorted, size ${n}`);
  }
  t.equal(hex(EMPTY_TREE_ROOT), ROOTS[0]);
});

t.test('produces and verifies the published RFC 6962 audit paths', async (t) => {
  for (const v of INCLUSION) {
    const tree = buildMerkleTree(leaves.slice(0, v.size));
    t.same(auditPath(tree, v.index).map(hex), v.path, `PATH(${v.index}, D[${v.size}])`);
    t.ok(
      verifyInclusionProof({ key: leaves[v.index]!, index: v.index, size: v.size, path: v.path, root: ROOTS[v.size]! }),
      `verifies PATH(${v.index}, D[${v.size}])`,
    );
  }
});

t.test('leaf and node hashing use the 0x00 and 0x01 prefixes', async (t) => {
  t.equal(hex(hashLeaf(Buffer.alloc(0))), ROOTS[1]);
  t.equal(hex(hashChildren(hashLeaf(leaves[0]!), hashLeaf(leaves[1]!))), ROOTS[2]);
});

t.test('matches the recursive RFC 9162 definition for every size up to 130', async (t) => {
  const rand = seeded(7);
  for (let n = 0; n <= 130; n++) {
    const keys = randomKeys(n, rand);
    if (!treeRoot(buildMerkleTree(keys)).equals(referenceRoot(keys))) t.fail(`size ${n} differs from the reference`);
  }
  t.pass('all sizes agree');
});

// Every size up to 64, then each side of the next power-of-two boundaries: where a tree's shape
// changes. (Every size to 300 was 45,150 proofs and the unit tier's slowest file.)
const SIZES = [...Array.from({ length: 64 }, (_, i) => i + 1), 127, 128, 129, 255, 256, 257, 300];

t.test('every leaf of random sorted trees of many sizes verifies, and every alteration fails', async (t) => {
  const rand = seeded(42);
  let verified = 0;
  let refused = 0;
  const failures: string[] = [];
  for (const n of SIZES) {
    const tree = buildSortedMerkleTree(randomKeys(n, rand));
    const root = treeRoot(tree);
    for (let i = 0; i < n; i++) {
      const key = tree.keys[i]!;
      const path = auditPath(tree, i);
      if (!verifyInclusionProof({ key, index: i, size: n, path, root }))
        failures.push(`size ${n} leaf ${i} does not verify`);
      else verified++;
      // Alterations on a sample of leaves per tree (first, last and a few random ones) keep the run short.
      if (i !== 0 && i !== n - 1 && rand() > 6 / n) continue;
      const alterations: Array<[string, Parameters<typeof verifyInclusionProof>[0]]> = [];
      const flipped = (b: Buffer, at: number) => {
        const c = Buffer.from(b);
        c[at % c.length]! ^= 1 << Math.floor(rand() * 8);
        return c;
      };
      for (let p = 0; p < path.length; p++) {
        alterations.push([
          `path[${p}] flipped`,
          {
            key,
            index: i,
            size: n,
            path: path.map((x, j) => (j === p ? flipped(x, Math.floor(rand() * 32)) : x)),
            root,
          },
        ]);
      }
      if (path.length > 0) {
        alterations.push(['last path element dropped', { key, index: i, size: n, path: path.slice(0, -1), root }]);
        alterations.push(['first path element dropped', { key, index: i, size: n, path: path.slice(1), root }]);
      }
      if (path.length > 1)
        alterations.push(['path reversed', { key, index: i, size: n, path: [...path].reverse(), root }]);
      alterations.push(['element appended', { key, index: i, size: n, path: [...path, root], root }]);
      alterations.push(['root flipped', { key, index: i, size: n, path, root: flipped(root, i) }]);
      alterations.push(['key flipped', { key: flipped(key, i), index: i, size: n, path, root }]);
      alterations.push(['index + 1', { key, index: i + 1, size: n, path, root }]);
      if (i > 0) alterations.push(['index - 1', { key, index: i - 1, size: n, path, root }]);
      alterations.push(['negative index', { key, index: -1, size: n, path, root }]);
      for (const [name, input] of alterations) {
        if (verifyInclusionProof(input)) failures.push(`size ${n} leaf ${i}: ${name} still verifies`);
        else refused++;
      }
    }
  }
  t.same(failures.slice(0, 20), [], 'no failures');
  t.equal(
    verified,
    SIZES.reduce((sum, n) => sum + n, 0),
    'every leaf verified',
  );
  t.ok(refused > 3_000, `${refused} alterations refused`);
});

t.test('the path alone does not bind the tree size: the signed checkpoint does', async (t) => {
  // RFC 9162 §2.1.3.2 accepts the same path under another size when the leaf's subtree is the
  // same in both trees (leaf 0 of 3 and of 4 share [l1, l2]-shaped paths against the same root).
  // Verifiers therefore take `size` from the signed checkpoint, never from the proof alone.
  const keys = randomKeys(3, seeded(3));
  const tree = buildMerkleTree(keys);
  const root = treeRoot(tree);
  t.ok(verifyInclusionProof({ key: keys[0]!, index: 0, size: 3, path: auditPath(tree, 0), root }));
  t.ok(
    verifyInclusionProof({ key: keys[0]!, index: 0, size: 4, path: auditPath(tree, 0), root }),
    'same root, other size',
  );
});

t.test('sorted trees order keys as bytes and refuse duplicates', async (t) => {
  const keys = [
    Buffer.from('ff', 'hex'),
    Buffer.from('00ff', 'hex'),
    Buffer.from('0100', 'hex'),
    Buffer.from('00', 'hex'),
  ];
  const tree = buildSortedMerkleTree(keys);
  t.same(tree.keys.map(hex), ['00', '00ff', '0100', 'ff']);
  t.equal(indexOfKey(tree, Buffer.from('0100', 'hex')), 2);
  t.equal(indexOfKey(tree, Buffer.from('02', 'hex')), -1);
  t.throws(() => buildSortedMerkleTree([Buffer.from('01', 'hex'), Buffer.from('01', 'hex')]), RangeError);
});

t.test('refuses malformed proof inputs without throwing', async (t) => {
  const tree = buildMerkleTree(leaves);
  const path = auditPath(tree, 3).map(hex);
  const root = ROOTS[8]!;
  t.ok(verifyInclusionProof({ key: leaves[3]!, index: 3, size: 8, path, root }));
  t.notOk(
    verifyInclusionProof({ key: leaves[3]!, index: 3, size: 8, path: [...path.slice(0, 2), 'zz'], root }),
    'non-hex path',
  );
  t.notOk(
    verifyInclusionProof({
      key: leaves[3]!,
      index: 3,
      size: 8,
      path: [...path.slice(0, 2), path[2]!.toUpperCase()],
      root,
    }),
    'upper-case hex',
  );
  t.notOk(
    verifyInclusionProof({
      key: leaves[3]!,
      index: 3,
      size: 8,
      path: [...path.slice(0, 2), path[2]!.slice(0, 62)],
      root,
    }),
    'short element',
  );
  t.notOk(verifyInclusionProof({ key: leaves[3]!, index: 3.5, size: 8, path, root }), 'fractional index');
  t.notOk(verifyInclusionProof({ key: leaves[3]!, index: 8, size: 8, path, root }), 'index = size');
  t.notOk(verifyInclusionProof({ key: leaves[3]!, index: 3, size: 8, path, root: root.slice(2) }), 'short root');
  t.equal(rootFromInclusionProof(hashLeaf(leaves[0]!), 0, 0, []), null, 'empty tree has no leaves');
  t.throws(() => auditPath(tree, 8), RangeError);
});
