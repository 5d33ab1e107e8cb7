import { canonicalJson } from '#lib/ledger/canonical-json.js';
import { treeKeyOf } from '#lib/ledger/receipt.js';
import { receiptSubjects } from '#lib/ledger/receipt-subjects.js';
import type { PlacedKey, ReceiptStore, StoredCheckpoint, StoredReceipt } from '../interface.js';
import { SEALING_LOCK } from '../locks.js';
import type { Sql } from '../sql.js';

interface ReceiptRow {
  hash: string;
  body: string;
  tree_key: Buffer;
  created_at: number;
  epoch: number | null;
  tree_index: number | null;
  path: Buffer | null;
  tlog_index: number | null;
}

const receiptFromRow = (row: ReceiptRow): StoredReceipt => ({
  hash: row.hash,
  body: row.body,
  treeKey: row.tree_key,
  createdAt: row.created_at,
  epoch: row.epoch,
  index: row.tree_index,
  path: row.path === null ? null : splitPath(row.path),
  tlogIndex: row.tlog_index,
});

interface CheckpointRow {
  epoch: number;
  jws: string;
  root: string;
  size: number;
  prev: string | null;
  sealed_at: number;
}

const CHECKPOINT_COLUMNS = 'epoch, jws, root, size, prev, sealed_at';

const checkpointFromRow = (row: CheckpointRow): StoredCheckpoint => ({
  epoch: row.epoch,
  jws: row.jws,
  root: row.root,
  size: row.size,
  prev: row.prev,
  sealedAt: row.sealed_at,
});

/** Audit paths are stored as one byte string: the 32-byte hashes back to back. */
const HASH_SIZE = 32;

function splitPath(blob: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < blob.length; i += HASH_SIZE) out.push(Buffer.from(blob.subarray(i, i + HASH_SIZE)));
  return out;
}

const INSERT_RECEIPT = 'INSERT INTO receipts (hash, tree_key, body, kind, created_at) VALUES ($1, $2, $3, $4, $5)';

const PLACE = 'UPDATE receipts SET epoch = $1, tree_index = $2, path = $3 WHERE hash = $4 AND epoch IS NULL';

type PlacedRow = { tree_index: number; tree_key: Buffer; path: Buffer };

const placed = (row: PlacedRow | undefined): PlacedKey | undefined =>
  row ? { index: row.tree_index, treeKey: row.tree_key, path: splitPath(row.path) } : undefined;

/**
 * SQLite keeps the ids a receipt names in receipt_subjects from the body as stored (JSON.parse of a
 * few hundred bytes), so that the backfill of the receipt-subjects migration, which reads stored
 * bodies, finds the same; PostgreSQL does it by trigger.
 */
async function indexSubjects(sql: Sql, seq: number, body: string): Promise<void> {
  const subjects = receiptSubjects(JSON.parse(body));
  if (subjects.length > 0)
    await sql.count('INSERT INTO receipt_subjects (subject, seq) SELECT value, $2 FROM json_each($1)', [
      JSON.stringify(subjects),
      seq,
    ]);
}

export function receiptStore(sql: Sql): ReceiptStore {
  return {
    append: async (receipt, hash, createdAt, body) => {
      const text = body ?? canonicalJson(receipt);
      const values = [hash, treeKeyOf(hash), text, receipt.kind, createdAt];
      // PostgreSQL indexes the ids a receipt names by trigger, whatever statement inserts it (one
      // that spends a refresh token takes this INSERT as it is: postgres/sql.ts `spendWith`).
      if (sql.dialect.name === 'postgres') {
        await sql.count(INSERT_RECEIPT, values);
        return;
      }
      const [row] = await sql.rows<{ seq: number }>(`${INSERT_RECEIPT} RETURNING seq`, values);
      await indexSubjects(sql, row!.seq, text);
    },
    list: async (query) => {
      // By an id: its rows in receipt_subjects, already in cursor order, joined to their receipts.
      const bySubject = query.subject !== undefined;
      const order = sql.dialect.receiptsAfter('$1', bySubject ? 's' : 'r');
      const where = [order.where];
      const values: unknown[] = [query.after];
      const add = (clause: (param: string) => string, value: unknown) => {
        values.push(value);
        where.push(clause(`$${values.length}`));
      };
      if (query.subject !== undefined) add((p) => `s.subject = ${p}`, query.subject);
      if (query.kind !== undefined) add((p) => `r.kind = ${p}`, query.kind);
      if (query.since !== undefined) add((p) => `r.created_at >= ${p}`, query.since);
      if (query.until !== undefined) add((p) => `r.created_at < ${p}`, query.until);
      values.push(query.limit);
      const from = bySubject ? 'receipt_subjects s JOIN receipts r ON r.seq = s.seq' : 'receipts r';
      const rows = await sql.rows<{ seq: number | string; hash: string; body: string; created_at: number | string }>(
        `SELECT r.seq, r.hash, r.body, r.created_at FROM ${from} WHERE ${where.join(' AND ')} ORDER BY ${order.orderBy} LIMIT $${values.length}`,
        values,
      );
      return rows.map((row) => ({
        position: Number(row.seq),
        hash: row.hash,
        body: row.body,
        createdAt: Number(row.created_at),
      }));
    },
    get: async (hash) => {
      const [row] = await sql.rows<ReceiptRow>(
        'SELECT hash, body, tree_key, created_at, epoch, tree_index, path, tlog_index FROM receipts WHERE hash = $1',
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
    // and with it the lock and its uncommitted epoch. On SQLite, BEGIN IMMEDIATE holds the
    // database's one write lock: no other sealer can run meanwhile.
    lockSealing: async () => {
      await sql.dialect.lock(sql, SEALING_LOCK);
    },
    assignEpoch: async (epoch, placements) => {
      // PostgreSQL takes the whole epoch in one statement (a round trip saved per receipt);
      // SQLite, in process, one prepared UPDATE per receipt. A receipt missing or sealed already
      // makes the count short.
      if (sql.dialect.name === 'sqlite') {
        for (const p of placements)
          if ((await sql.count(PLACE, [epoch, p.index, Buffer.concat(p.path), p.hash])) !== 1)
            throw new Error(`receipt ${p.hash} is missing or already sealed`);
        return;
      }
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
    appendSealed: async (epoch, receipts) => {
      if (sql.dialect.name === 'sqlite') {
        for (const r of receipts) {
          const [row] = await sql.rows<{ seq: number }>(
            'INSERT INTO receipts (hash, tree_key, body, kind, created_at, epoch, tree_index, path) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING seq',
            [r.hash, treeKeyOf(r.hash), r.body, r.kind, r.createdAt, epoch, r.index, Buffer.concat(r.path)],
          );
          await indexSubjects(sql, row!.seq, r.body);
        }
        return;
      }
      // PostgreSQL: the whole epoch in one statement, as assignEpoch.
      await sql.count(
        `INSERT INTO receipts (hash, tree_key, body, kind, created_at, epoch, tree_index, path)
         SELECT r.hash, r.tree_key, r.body, r.kind, r.created_at, $1, r.idx, r.path
         FROM unnest($2::text[], $3::bytea[], $4::text[], $5::text[], $6::bigint[], $7::int[], $8::bytea[])
           AS r(hash, tree_key, body, kind, created_at, idx, path)`,
        [
          epoch,
          receipts.map((r) => r.hash),
          receipts.map((r) => treeKeyOf(r.hash)),
          receipts.map((r) => r.body),
          receipts.map((r) => r.kind),
          receipts.map((r) => r.createdAt),
          receipts.map((r) => r.index),
          receipts.map((r) => Buffer.concat(r.path)),
        ],
      );
    },
    insertCheckpoint: async (c) => {
      await sql.count(
        'INSERT INTO receipt_checkpoints (epoch, jws, root, size, prev, sealed_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [c.epoch, c.jws, c.root, c.size, c.prev, c.sealedAt],
      );
    },
    checkpoint: async (epoch) => {
      const [row] = await sql.rows<CheckpointRow>(
        `SELECT ${CHECKPOINT_COLUMNS} FROM receipt_checkpoints WHERE epoch = $1`,
        [epoch],
      );
      return row ? checkpointFromRow(row) : undefined;
    },
    latestCheckpoint: async () => {
      const [row] = await sql.rows<CheckpointRow>(
        `SELECT ${CHECKPOINT_COLUMNS} FROM receipt_checkpoints ORDER BY epoch DESC LIMIT 1`,
      );
      return row ? checkpointFromRow(row) : undefined;
    },
    neighbours: async (epoch, treeKey) => {
      const rows = await sql.rows<PlacedRow & { side: string }>(
        `SELECT * FROM (SELECT 'left' AS side, tree_index, tree_key, path FROM receipts
           WHERE epoch = $1 AND tree_key < $2 ORDER BY tree_key DESC LIMIT 1) AS l
         UNION ALL
         SELECT 'match', tree_index, tree_key, path FROM receipts WHERE epoch = $1 AND tree_key = $2
         UNION ALL
         SELECT * FROM (SELECT 'right' AS side, tree_index, tree_key, path FROM receipts
           WHERE epoch = $1 AND tree_key > $2 ORDER BY tree_key ASC LIMIT 1) AS r`,
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
