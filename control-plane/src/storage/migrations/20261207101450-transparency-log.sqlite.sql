-- The transparency log (docs/ledger.md#verifying-with-transparency-tools): one append-only RFC 6962 tree over every
-- sealed epoch's tree keys in epoch order, served as C2SP tlog-tiles, its checkpoints C2SP signed notes. Epochs sealed
-- before this migration are appended, in order, when the control plane next starts.
ALTER TABLE receipts ADD COLUMN tlog_index INTEGER;
CREATE UNIQUE INDEX receipts_by_tlog_index ON receipts (tlog_index) WHERE tlog_index IS NOT NULL;
ALTER TABLE receipt_checkpoints ADD COLUMN tlog_size INTEGER;
ALTER TABLE receipt_checkpoints ADD COLUMN note TEXT;
CREATE TABLE tlog_tiles (
  level INTEGER NOT NULL,
  tile_index INTEGER NOT NULL,
  hashes BLOB NOT NULL CHECK (length(hashes) BETWEEN 32 AND 8192),
  PRIMARY KEY (level, tile_index)
) STRICT;
CREATE TABLE tlog_cosignatures (
  epoch INTEGER NOT NULL REFERENCES receipt_checkpoints (epoch),
  witness TEXT NOT NULL,
  line TEXT NOT NULL,
  cosigned_at INTEGER NOT NULL,
  PRIMARY KEY (epoch, witness)
) STRICT;
-- Ed25519 note keys: `log` signs the checkpoints, `witness` cosigns other logs'. Private keys sealed under the master key.
CREATE TABLE note_keys (
  key_id TEXT PRIMARY KEY,
  purpose TEXT NOT NULL CHECK (purpose IN ('log', 'witness')),
  name TEXT NOT NULL,
  public_key BLOB NOT NULL CHECK (length(public_key) = 32),
  sealed_private_key BLOB NOT NULL,
  created_at INTEGER NOT NULL,
  retires_at INTEGER
) STRICT;
-- What this instance, as a witness, cosigned last per log: advanced only by a conditional update.
CREATE TABLE witnessed_logs (
  origin TEXT PRIMARY KEY,
  size INTEGER NOT NULL CHECK (size >= 0),
  root BLOB NOT NULL CHECK (length(root) = 32),
  updated_at INTEGER NOT NULL
) STRICT;
