import { canonicalJson } from '../../../../lib/ledger/canonical-json.js';
import { treeKeyOf } from '../../../../lib/ledger/receipt.js';
import { checkpointFromRow, receiptFromRow, splitPath, type CheckpointRow, type ReceiptRow } from '../rows.js';
import type { PlacedKey, ReceiptStore } from '../types.js';
import { SEALING_LOCK } from '../locks.js';
import type { Sql } from './sql.js';

type PlacedRow = { tree_index: number; tree_key: Buffer; path: Buffer };

const placed = (row: PlacedRow | undefined): PlacedKey | undefined =>
  row ? { index: row.tree_index, treeKey: row.tree_key, path: splitPath(row.path) } : undefined;

export function postgresReceiptStore(sql: Sql): ReceiptStore {
  return {
    append: async (receipt, hash, createdAt, body) => {
      await sql.count('INSERT INTO receipts (hash, tree_key, body, kind, created_at) VALUES ($1, $2, $3, $4, $5)', [
        hash,
        treeKeyOf(hash),
        body ?? canonicalJson(receipt),
        receipt.kind,
        createdAt,
      ]);
    },
    get: async (hash) => {
      const [row] = await sql.rows<ReceiptRow>(
        'SELECT hash, body, tree_key, created_at, epoch, tree_index, path FROM receipts WHERE hash = $1',
        [hash],
      );
      return row ? receiptFromRow(row) : undefined;
    },
    pending: async (limit) =>
      (
        await sql.rows<{ hash: string; tree_key: Buffer }>(
          'SELECT hash, tree_key FROM receipts WHERE epoch IS NULL ORDER BY seq LIMIT $1',
          [limit],
        )
      ).map((r) => ({ hash: r.hash, treeKey: r.tree_key })),
    pendingCount: async () =>
      (await sql.rows<{ n: number }>('SELECT count(*) AS n FROM receipts WHERE epoch IS NULL'))[0]!.n,
    // Held until the sealing transaction ends; a replica killed mid-seal loses its connection,
    // and with it the lock and its uncommitted epoch.
    lockSealing: async () => {
      await sql.rows('SELECT pg_advisory_xact_lock($1)', [SEALING_LOCK]);
    },
    assignEpoch: async (epoch, placements) => {
      // One statement for the whole epoch; a receipt missing or sealed already makes the count short.
      const changed = await sql.count(
        `UPDATE receipts r SET epoch = $1, tree_index = p.idx, path = p.path
         FROM unnest($2::text[], $3::int[], $4::bytea[]) AS p(hash, idx, path)
         WHERE r.hash = p.hash AND r.epoch IS NULL`,
        [
          epoch,
          placements.map((p) => p.hash),
          placements.map((p) => p.index),
          placements.map((p) => Buffer.concat(p.path)),
        ],
      );
      if (changed !== placements.length)
        throw new Error(`${placements.length - changed} receipt(s) of epoch ${epoch} are missing or already sealed`);
    },
    insertCheckpoint: async (c) => {
      await sql.count(
        'INSERT INTO receipt_checkpoints (epoch, jws, root, size, prev, sealed_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [c.epoch, c.jws, c.root, c.size, c.prev, c.sealedAt],
      );
    },
    checkpoint: async (epoch) => {
      const [row] = await sql.rows<CheckpointRow>('SELECT * FROM receipt_checkpoints WHERE epoch = $1', [epoch]);
      return row ? checkpointFromRow(row) : undefined;
    },
    latestCheckpoint: async () => {
      const [row] = await sql.rows<CheckpointRow>('SELECT * FROM receipt_checkpoints ORDER BY epoch DESC LIMIT 1');
      return row ? checkpointFromRow(row) : undefined;
    },
    neighbours: async (epoch, treeKey) => {
      const rows = await sql.rows<PlacedRow & { side: string }>(
        `(SELECT 'left' AS side, tree_index, tree_key, path FROM receipts WHERE epoch = $1 AND tree_key < $2 ORDER BY tree_key DESC LIMIT 1)
         UNION ALL
         (SELECT 'match', tree_index, tree_key, path FROM receipts WHERE epoch = $1 AND tree_key = $2)
         UNION ALL
         (SELECT 'right', tree_index, tree_key, path FROM receipts WHERE epoch = $1 AND tree_key > $2 ORDER BY tree_key ASC LIMIT 1)`,
        [epoch, treeKey],
      );
      const out: { left?: PlacedKey; match?: PlacedKey; right?: PlacedKey } = {};
      for (const row of rows) out[row.side as 'left' | 'match' | 'right'] = placed(row);
      return out;
    },
    epochReceipts: async (epoch) =>
      (
        await sql.rows<{ hash: string; body: string; tree_index: number }>(
          'SELECT hash, body, tree_index FROM receipts WHERE epoch = $1 ORDER BY tree_index',
          [epoch],
        )
      ).map((r) => ({ hash: r.hash, body: r.body, index: r.tree_index })),
  };
}
