import {
  EMPTY_TREE_ROOT,
  auditPath,
  lowerBound,
  toHex,
  verifyInclusionProof,
  type SortedMerkleTree,
} from './merkle-tree.js';

/** A key present in the tree, with its position and RFC 9162 audit path (hex). */
export interface AbsenceNeighbour {
  index: number;
  key: string;
  path: string[];
}

/**
 * Proof that a key is not among an epoch's sorted keys: the neighbours on either side of
 * where it would sit. `left` is null when the key would come first, `right` when it would come
 * last; both are null only for an empty tree.
 */
export interface AbsenceProof {
  size: number;
  left: AbsenceNeighbour | null;
  right: AbsenceNeighbour | null;
}

/** Builds the absence proof for `key`, or returns null when the key is in the tree. */
export function buildAbsenceProof(tree: SortedMerkleTree, key: Uint8Array): AbsenceProof | null {
  const at = lowerBound(tree.keys, key);
  if (at < tree.size && Buffer.compare(tree.keys[at]!, key) === 0) return null;
  const neighbour = (index: number): AbsenceNeighbour => ({
    index,
    key: toHex(tree.keys[index]!),
    path: auditPath(tree, index).map(toHex),
  });
  return { size: tree.size, left: at > 0 ? neighbour(at - 1) : null, right: at < tree.size ? neighbour(at) : null };
}

export interface AbsenceCheck {
  /** The key whose absence is claimed (32 bytes, or hex). */
  key: Uint8Array | string;
  proof: AbsenceProof;
  /** The tree head the proof must match (from a verified checkpoint). */
  root: Uint8Array | string;
  /** The size the checkpoint states; must equal `proof.size`. */
  size: number;
}

/**
 * Verifies an absence proof. The leaves of a sorted tree are strictly ascending, so two
 * leaves at adjacent positions with `left < key < right` leave no place for `key`; at the
 * edges one neighbour at position 0 (or size-1) suffices, and the empty tree holds nothing.
 */
export function verifyAbsenceProof(check: AbsenceCheck): boolean {
  const key = typeof check.key === 'string' ? hex(check.key) : Buffer.from(check.key);
  const root = typeof check.root === 'string' ? hex(check.root) : Buffer.from(check.root);
  const { proof, size } = check;
  if (!key || !root || !proof || proof.size !== size || !Number.isSafeInteger(size) || size < 0) return false;
  const { left, right } = proof;
  if (size === 0) return left === null && right === null && root.equals(EMPTY_TREE_ROOT);
  const present = (n: AbsenceNeighbour | null): n is AbsenceNeighbour =>
    n !== null &&
    typeof n === 'object' &&
    typeof n.key === 'string' &&
    Array.isArray(n.path) &&
    verifyInclusionProof({ key: n.key, index: n.index, size, path: n.path, root });
  if (left !== null && !present(left)) return false;
  if (right !== null && !present(right)) return false;
  const below = (n: AbsenceNeighbour) => Buffer.compare(hex(n.key)!, key) < 0;
  const above = (n: AbsenceNeighbour) => Buffer.compare(hex(n.key)!, key) > 0;
  if (left && right) return right.index === left.index + 1 && below(left) && above(right);
  if (right) return right.index === 0 && above(right);
  if (left) return left.index === size - 1 && below(left);
  return false;
}

function hex(value: string): Buffer | null {
  return /^(?:[0-9a-f]{2})+$/.test(value) ? Buffer.from(value, 'hex') : null;
}
