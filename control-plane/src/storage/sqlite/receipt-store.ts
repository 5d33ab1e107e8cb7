import { canonicalJson } from '#lib/ledger/canonical-json.js';
import { treeKeyOf } from '#lib/ledger/receipt.js';
import type { PlacedKey, ReceiptStore } from '../types.js';
import type { Sqlite } from './database.js';
import type { Runner } from './serial-runner.js';
import { checkpointFromRow, receiptFromRow, splitPath, type CheckpointRow, type ReceiptRow } from '../rows.js';

// Prepared once per database: the append path runs inside every receipted request.
const statementCache = new WeakMap<Sqlite, ReturnType<typeof prepare>>();

function prepare(db: Sqlite) {
  return {
    append: db.prepare('INSERT INTO receipts (hash, tree_key, body, kind, created_at) VALUES (?, ?, ?, ?, ?)'),
    get: db.prepare('SELECT hash, body, tree_key, created_at, epoch, tree_index, path FROM receipts WHERE hash = ?'),
    pending: db.prepare('SELECT hash, tree_key FROM receipts WHERE epoch IS NULL ORDER BY seq LIMIT ?'),
    pendingCount: db.prepare('SELECT count(*) AS n FROM receipts WHERE epoch IS NULL'),
    place: db.prepare('UPDATE receipts SET epoch = ?, tree_index = ?, path = ? WHERE hash = ? AND epoch IS NULL'),
    insertCheckpoint: db.prepare(
      'INSERT INTO receipt_checkpoints (epoch, jws, root, size, prev, sealed_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    checkpoint: db.prepare('SELECT * FROM receipt_checkpoints WHERE epoch = ?'),
    latest: db.prepare('SELECT * FROM receipt_checkpoints ORDER BY epoch DESC LIMIT 1'),
    below: db.prepare(
      'SELECT tree_index, tree_key, path FROM receipts WHERE epoch = ? AND tree_key < ? ORDER BY tree_key DESC LIMIT 1',
    ),
    at: db.prepare('SELECT tree_index, tree_key, path FROM receipts WHERE epoch = ? AND tree_key = ?'),
    above: db.prepare(
      'SELECT tree_index, tree_key, path FROM receipts WHERE epoch = ? AND tree_key > ? ORDER BY tree_key ASC LIMIT 1',
    ),
    epochReceipts: db.prepare('SELECT hash, body, tree_index FROM receipts WHERE epoch = ? ORDER BY tree_index'),
  };
}

function statements(db: Sqlite) {
  let cached = statementCache.get(db);
  if (!cached) statementCache.set(db, (cached = prepare(db)));
  return cached;
}

export function sqliteReceiptStore(runner: Runner): ReceiptStore {
  return {
    append: (receipt, hash, createdAt, canonical) => {
      const body = canonical ?? canonicalJson(receipt);
      const key = treeKeyOf(hash);
      return runner.run((db) => {
        statements(db).append.run(hash, key, body, receipt.kind, createdAt);
      });
    },
    get: (hash) =>
      runner.run((db) => {
        const row = statements(db).get.get(hash) as ReceiptRow | undefined;
        return row ? receiptFromRow(row) : undefined;
      }),
    pending: (limit) =>
      runner.run((db) =>
        (statements(db).pending.all(limit) as Array<{ hash: string; tree_key: Buffer }>).map((r) => ({
          hash: r.hash,
          treeKey: r.tree_key,
        })),
      ),
    // BEGIN IMMEDIATE holds the database's one write lock: no other sealer can run meanwhile.
    lockSealing: () => Promise.resolve(),
    pendingCount: () => runner.run((db) => (statements(db).pendingCount.get() as { n: number }).n),
    assignEpoch: (epoch, placements) =>
      runner.run((db) => {
        const place = statements(db).place;
        for (const p of placements) {
          const changed = place.run(epoch, p.index, Buffer.concat(p.path), p.hash).changes;
          if (changed !== 1) throw new Error(`receipt ${p.hash} is missing or already sealed`);
        }
      }),
    insertCheckpoint: (c) =>
      runner.run((db) => {
        statements(db).insertCheckpoint.run(c.epoch, c.jws, c.root, c.size, c.prev, c.sealedAt);
      }),
    checkpoint: (epoch) =>
      runner.run((db) => {
        const row = statements(db).checkpoint.get(epoch) as CheckpointRow | undefined;
        return row ? checkpointFromRow(row) : undefined;
      }),
    latestCheckpoint: () =>
      runner.run((db) => {
        const row = statements(db).latest.get() as CheckpointRow | undefined;
        return row ? checkpointFromRow(row) : undefined;
      }),
    neighbours: (epoch, treeKey) =>
      runner.run((db) => {
        const s = statements(db);
        const placed = (row: unknown): PlacedKey | undefined => {
          const r = row as { tree_index: number; tree_key: Buffer; path: Buffer } | undefined;
          return r ? { index: r.tree_index, treeKey: r.tree_key, path: splitPath(r.path) } : undefined;
        };
        const out: { left?: PlacedKey; match?: PlacedKey; right?: PlacedKey } = {};
        const left = placed(s.below.get(epoch, treeKey));
        const match = placed(s.at.get(epoch, treeKey));
        const right = placed(s.above.get(epoch, treeKey));
        if (left) out.left = left;
        if (match) out.match = match;
        if (right) out.right = right;
        return out;
      }),
    epochReceipts: (epoch) =>
      runner.run((db) =>
        (statements(db).epochReceipts.all(epoch) as Array<{ hash: string; body: string; tree_index: number }>).map(
          (r) => ({
            hash: r.hash,
            body: r.body,
            index: r.tree_index,
          }),
        ),
      ),
  };
}
