import { sha256 } from '../crypto/sha256.js';

/**
 * RFC 9162 §2.1 Merkle trees over SHA-256: leaf hash `SHA-256(0x00 || d)`, node hash
 * `SHA-256(0x01 || left || right)`, the empty tree `SHA-256()`.
 */

const HASH_SIZE = 32;
const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);

/** MTH({}) = SHA-256() (RFC 9162 §2.1.1). */
export const EMPTY_TREE_ROOT: Buffer = sha256(new Uint8Array(0));

const nodeInput = Buffer.alloc(1 + 2 * HASH_SIZE);
nodeInput[0] = NODE_PREFIX[0]!;

const keyLeafInput = Buffer.alloc(1 + HASH_SIZE);

export function hashLeaf(data: Uint8Array): Buffer {
  if (data.length === HASH_SIZE) {
    keyLeafInput.set(data, 1);
    return sha256(keyLeafInput);
  }
  const input = Buffer.allocUnsafe(1 + data.length);
  input[0] = LEAF_PREFIX[0]!;
  input.set(data, 1);
  return sha256(input);
}

export function hashChildren(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== HASH_SIZE || right.length !== HASH_SIZE) {
    return sha256(Buffer.concat([NODE_PREFIX, left, right]));
  }
  nodeInput.set(left, 1);
  nodeInput.set(right, 1 + HASH_SIZE);
  return sha256(nodeInput);
}

/**
 * A built tree, level by level: `levels[0]` holds the leaf hashes, each level the next one up,
 * 32 bytes per node, packed into one buffer per level. A level with an odd count carries its
 * last node up unchanged; that is the same tree as RFC 9162's split at the largest power of
 * two smaller than n (the left subtree is always complete).
 */
export interface MerkleTree {
  size: number;
  levels: Buffer[];
}

/** A tree over keys sorted ascending as bytes; `keys[i]` is leaf `i`. */
export interface SortedMerkleTree extends MerkleTree {
  keys: Buffer[];
}

/** Builds the RFC 9162 tree over `leaves` in the order given. */
export function buildMerkleTree(leaves: readonly Uint8Array[]): MerkleTree {
  if (leaves.length === 0) return { size: 0, levels: [] };
  const bottom = Buffer.allocUnsafe(leaves.length * HASH_SIZE);
  leaves.forEach((leaf, i) => hashLeaf(leaf).copy(bottom, i * HASH_SIZE));
  const levels = [bottom];
  let level = bottom;
  let count = leaves.length;
  while (count > 1) {
    const nextCount = Math.ceil(count / 2);
    const next = Buffer.allocUnsafe(nextCount * HASH_SIZE);
    for (let i = 0; i + 1 < count; i += 2) {
      hashChildren(nodeAt(level, i), nodeAt(level, i + 1)).copy(next, (i / 2) * HASH_SIZE);
    }
    if (count % 2 === 1) level.copy(next, (nextCount - 1) * HASH_SIZE, (count - 1) * HASH_SIZE, count * HASH_SIZE);
    levels.push(next);
    level = next;
    count = nextCount;
  }
  return { size: leaves.length, levels };
}

/**
 * Sorts `keys` ascending as bytes and builds the RFC 9162 tree over them, so that a key's
 * position is determined by the set alone and neighbours can prove absence. Duplicate keys
 * are refused: adjacency would no longer prove anything.
 */
export function buildSortedMerkleTree(keys: readonly Uint8Array[]): SortedMerkleTree {
  // Sorting on latin1 strings compares code units 0-255, which is byte order, without a call
  // into C++ per comparison.
  const sorted = keys
    .map((k) => {
      const bytes = Buffer.from(k.buffer, k.byteOffset, k.byteLength);
      return { bytes, order: bytes.toString('latin1') };
    })
    .sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0))
    .map((entry) => entry.bytes);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i - 1]!.equals(sorted[i]!)) throw new RangeError('duplicate key in a sorted Merkle tree');
  }
  return { ...buildMerkleTree(sorted), keys: sorted };
}

/** The tree head: MTH of all its leaves. */
export function treeRoot(tree: MerkleTree): Buffer {
  const top = tree.levels[tree.levels.length - 1];
  return top ? Buffer.from(top.subarray(0, HASH_SIZE)) : Buffer.from(EMPTY_TREE_ROOT);
}

/** The RFC 9162 audit path PATH(index, D[n]): sibling hashes from the leaf up to the root. */
export function auditPath(tree: MerkleTree, index: number): Buffer[] {
  if (!Number.isSafeInteger(index) || index < 0 || index >= tree.size) throw new RangeError('leaf index out of range');
  const path: Buffer[] = [];
  let i = index;
  for (let l = 0; l < tree.levels.length - 1; l++) {
    const count = tree.levels[l]!.length / HASH_SIZE;
    const sibling = i ^ 1;
    if (sibling < count) path.push(Buffer.from(nodeAt(tree.levels[l]!, sibling)));
    i >>= 1;
  }
  return path;
}

/** Position of `key` in a sorted tree, or -1 (binary search). */
export function indexOfKey(tree: SortedMerkleTree, key: Uint8Array): number {
  const at = lowerBound(tree.keys, key);
  return at < tree.keys.length && Buffer.compare(tree.keys[at]!, key) === 0 ? at : -1;
}

/** The first position whose key is not below `key`. */
export function lowerBound(sortedKeys: readonly Uint8Array[], key: Uint8Array): number {
  let lo = 0;
  let hi = sortedKeys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (Buffer.compare(sortedKeys[mid]!, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

type Bytes = Uint8Array | string;

export interface InclusionProofInput {
  /** The leaf's data (for receipts: the 32-byte tree key), as bytes or lower-case hex. */
  key: Bytes;
  index: number;
  size: number;
  path: readonly Bytes[];
  root: Bytes;
}

/**
 * RFC 9162 §2.1.3.2: recomputes the root from a leaf, its index, the tree size and the audit
 * path. Returns null when the path cannot belong to a tree of that size.
 */
export function rootFromInclusionProof(
  leafHash: Uint8Array,
  index: number,
  size: number,
  path: readonly Uint8Array[],
): Buffer | null {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return null;
  let fn = index;
  let sn = size - 1;
  let r: Buffer = Buffer.from(leafHash);
  for (const p of path) {
    if (p.length !== HASH_SIZE) return null;
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = hashChildren(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = hashChildren(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

/** True when `path` proves that `key` is leaf `index` of the `size`-leaf tree with head `root`. */
export function verifyInclusionProof(input: InclusionProofInput): boolean {
  const key = bytesOf(input.key);
  const root = bytesOf(input.root);
  const path = input.path.map(bytesOf);
  if (!key || !root || root.length !== HASH_SIZE || path.some((p) => p === null)) return false;
  const computed = rootFromInclusionProof(hashLeaf(key), input.index, input.size, path as Buffer[]);
  return computed !== null && computed.equals(root);
}

/** Hex for the wire. */
export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

function bytesOf(value: Bytes): Buffer | null {
  if (typeof value !== 'string') return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return /^(?:[0-9a-f]{2})*$/.test(value) ? Buffer.from(value, 'hex') : null;
}

function nodeAt(level: Buffer, i: number): Buffer {
  return level.subarray(i * HASH_SIZE, (i + 1) * HASH_SIZE);
}
