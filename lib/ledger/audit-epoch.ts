import { canonicalJson } from './canonical-json.js';
import { buildSortedMerkleTree, toHex, treeRoot } from './merkle-tree.js';
import { hashReceipt, treeKeyOf } from './receipt.js';

export interface EpochAuditInput {
  /** The stored receipts of the epoch: their address and canonical JSON. */
  receipts: Array<{ hash: string; body: string }>;
  /** What the signed checkpoint states. */
  root: string;
  size: number;
}

export type EpochAudit = { ok: true; root: string } | { ok: false; root: string; problems: string[] };

/**
 * Recomputes an epoch from its receipts alone: each body is re-hashed (RFC 8785 + SHA-256),
 * each hash turned into its tree key, the keys sorted and built into the RFC 9162 tree, and
 * the head compared with the checkpoint's root and size. A receipt edited after sealing
 * changes its hash, hence its key, hence the root.
 */
export function auditEpoch(input: EpochAuditInput): EpochAudit {
  const problems: string[] = [];
  const keys = input.receipts.map((r) => {
    let hash: string;
    try {
      const parsed: unknown = JSON.parse(r.body);
      hash = hashReceipt(parsed);
      if (canonicalJson(parsed) !== r.body) problems.push(`receipt ${r.hash} is not stored in canonical form`);
    } catch {
      problems.push(`receipt ${r.hash} is not JSON`);
      hash = '00'.repeat(32);
    }
    if (hash !== r.hash) problems.push(`receipt ${r.hash} now hashes to ${hash}`);
    return treeKeyOf(hash);
  });
  let root: string;
  try {
    root = toHex(treeRoot(buildSortedMerkleTree(keys)));
  } catch {
    return { ok: false, root: '', problems: [...problems, 'two receipts share a tree key'] };
  }
  if (root !== input.root)
    problems.unshift(`root differs: the checkpoint says ${input.root}, the receipts give ${root}`);
  if (keys.length !== input.size)
    problems.push(`size differs: the checkpoint says ${input.size}, ${keys.length} receipts are stored`);
  return problems.length === 0 ? { ok: true, root } : { ok: false, root, problems };
}
