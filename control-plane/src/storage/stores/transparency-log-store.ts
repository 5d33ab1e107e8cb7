import type { LoggedEpoch, NoteKeyPurpose, StoredNoteKey, TransparencyLogStore } from '../interface.js';
import type { Sql } from '../sql.js';

interface NoteKeyRow {
  key_id: string;
  purpose: NoteKeyPurpose;
  name: string;
  public_key: Buffer;
  sealed_private_key: Buffer;
  created_at: number;
  retires_at: number | null;
}

const noteKeyFromRow = (row: NoteKeyRow): StoredNoteKey => ({
  keyId: row.key_id,
  purpose: row.purpose,
  name: row.name,
  publicKey: row.public_key,
  sealedPrivateKey: row.sealed_private_key,
  createdAt: row.created_at,
  retiresAt: row.retires_at,
});

type LoggedRow = { epoch: number; tlog_size: number; note: string };
const loggedFromRow = (row: LoggedRow | undefined): LoggedEpoch | undefined =>
  row ? { epoch: row.epoch, treeSize: row.tlog_size, note: row.note } : undefined;

export function transparencyLogStore(sql: Sql): TransparencyLogStore {
  return {
    head: async () =>
      loggedFromRow(
        (
          await sql.rows<LoggedRow>(
            'SELECT epoch, tlog_size, note FROM receipt_checkpoints WHERE tlog_size IS NOT NULL ORDER BY epoch DESC LIMIT 1',
          )
        )[0],
      ),
    logged: async (epoch) =>
      loggedFromRow(
        (
          await sql.rows<LoggedRow>(
            'SELECT epoch, tlog_size, note FROM receipt_checkpoints WHERE epoch = $1 AND tlog_size IS NOT NULL',
            [epoch],
          )
        )[0],
      ),
    unloggedEpochs: async (limit) =>
      (
        await sql.rows<{ epoch: number }>(
          'SELECT epoch FROM receipt_checkpoints WHERE tlog_size IS NULL ORDER BY epoch LIMIT $1',
          [limit],
        )
      ).map((r) => r.epoch),
    epochKeys: async (epoch) =>
      (
        await sql.rows<{ tree_key: Buffer }>('SELECT tree_key FROM receipts WHERE epoch = $1 ORDER BY tree_index', [
          epoch,
        ])
      ).map((r) => r.tree_key),
    tile: async (level, index) =>
      (
        await sql.rows<{ hashes: Buffer }>('SELECT hashes FROM tlog_tiles WHERE level = $1 AND tile_index = $2', [
          level,
          index,
        ])
      )[0]?.hashes,
    putTiles: async (tiles) => {
      for (const t of tiles)
        await sql.count(
          `INSERT INTO tlog_tiles (level, tile_index, hashes) VALUES ($1, $2, $3)
           ON CONFLICT (level, tile_index) DO UPDATE SET hashes = excluded.hashes`,
          [t.level, t.index, t.hashes],
        );
    },
    appendEpoch: async (epoch, firstIndex, treeSize, note) => {
      await sql.count('UPDATE receipts SET tlog_index = $1 + tree_index WHERE epoch = $2', [firstIndex, epoch]);
      const changed = await sql.count(
        'UPDATE receipt_checkpoints SET tlog_size = $1, note = $2 WHERE epoch = $3 AND tlog_size IS NULL',
        [treeSize, note, epoch],
      );
      if (changed !== 1) throw new Error(`epoch ${epoch} is missing or already in the log`);
    },
    entries: async (start, count) =>
      (
        await sql.rows<{ tree_key: Buffer }>(
          'SELECT tree_key FROM receipts WHERE tlog_index >= $1 AND tlog_index < $2 ORDER BY tlog_index',
          [start, start + count],
        )
      ).map((r) => r.tree_key),
    addCosignature: async (epoch, witness, line, at) => {
      await sql.count(
        `INSERT INTO tlog_cosignatures (epoch, witness, line, cosigned_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (epoch, witness) DO NOTHING`,
        [epoch, witness, line, at],
      );
    },
    cosignatures: async (epoch) =>
      (
        await sql.rows<{ line: string }>('SELECT line FROM tlog_cosignatures WHERE epoch = $1 ORDER BY witness', [
          epoch,
        ])
      ).map((r) => r.line),
    cosignedSize: async (witness) =>
      (
        await sql.rows<{ size: number | null }>(
          `SELECT max(c.tlog_size) AS size FROM tlog_cosignatures s
           JOIN receipt_checkpoints c ON c.epoch = s.epoch WHERE s.witness = $1`,
          [witness],
        )
      )[0]?.size ?? 0,
    noteKeys: async (purpose) =>
      (
        await sql.rows<NoteKeyRow>('SELECT * FROM note_keys WHERE purpose = $1 ORDER BY created_at, key_id', [purpose])
      ).map(noteKeyFromRow),
    insertNoteKey: async (k) => {
      await sql.count(
        `INSERT INTO note_keys (key_id, purpose, name, public_key, sealed_private_key, created_at, retires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [k.keyId, k.purpose, k.name, k.publicKey, k.sealedPrivateKey, k.createdAt, k.retiresAt],
      );
    },
    retireNoteKeys: async (purpose, keep, retiresAt) => {
      await sql.count(
        'UPDATE note_keys SET retires_at = $1 WHERE purpose = $2 AND key_id <> $3 AND retires_at IS NULL',
        [retiresAt, purpose, keep],
      );
    },
    witnessed: async (origin) => {
      const [row] = await sql.rows<{ size: number; root: Buffer }>(
        'SELECT size, root FROM witnessed_logs WHERE origin = $1',
        [origin],
      );
      return row ? { size: row.size, root: row.root } : undefined;
    },
    advanceWitnessed: async (origin, oldSize, size, root, at) => {
      const moved = await sql.count(
        'UPDATE witnessed_logs SET size = $1, root = $2, updated_at = $3 WHERE origin = $4 AND size = $5',
        [size, root, at, origin, oldSize],
      );
      if (moved === 1 || oldSize !== 0) return moved === 1;
      return (
        (await sql.count(
          `INSERT INTO witnessed_logs (origin, size, root, updated_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT (origin) DO NOTHING`,
          [origin, size, root, at],
        )) === 1
      );
    },
  };
}
