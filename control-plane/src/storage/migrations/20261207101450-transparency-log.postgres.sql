-- The transparency log (docs/ledger.md#verifying-with-transparency-tools): one append-only RFC 6962 tree over every
-- sealed epoch's tree keys in epoch order, served as C2SP tlog-tiles, its checkpoints C2SP signed notes. Epochs sealed
-- before this migration are appended, in order, when the control plane next starts.
ALTER TABLE receipts ADD COLUMN tlog_index BIGINT;
CREATE UNIQUE INDEX receipts_by_tlog_index ON receipts (tlog_index) WHERE tlog_index IS NOT NULL;
ALTER TABLE receipt_checkpoints ADD COLUMN tlog_size BIGINT;
ALTER TABLE receipt_checkpoints ADD COLUMN note TEXT;
CREATE TABLE tlog_tiles (
  level INTEGER NOT NULL,
  tile_index BIGINT NOT NULL,
  hashes BYTEA NOT NULL CHECK (length(hashes) BETWEEN 32 AND 8192),
  PRIMARY KEY (level, tile_index)
);
CREATE TABLE tlog_cosignatures (
  epoch BIGINT NOT NULL REFERENCES receipt_checkpoints (epoch),
  witness TEXT NOT NULL,
  line TEXT NOT NULL,
  cosigned_at BIGINT NOT NULL,
  PRIMARY KEY (epoch, witness)
);
-- Ed25519 note keys: `log` signs the checkpoints, `witness` cosigns other logs'. Private keys sealed under the master key.
CREATE TABLE note_keys (
  key_id TEXT PRIMARY KEY,
  purpose TEXT NOT NULL CHECK (purpose IN ('log', 'witness')),
  name TEXT NOT NULL,
  public_key BYTEA NOT NULL CHECK (length(public_key) = 32),
  sealed_private_key BYTEA NOT NULL,
  created_at BIGINT NOT NULL,
  retires_at BIGINT
);
-- What this instance, as a witness, cosigned last per log: advanced only by a conditional update.
CREATE TABLE witnessed_logs (
  origin TEXT PRIMARY KEY,
  size BIGINT NOT NULL CHECK (size >= 0),
  root BYTEA NOT NULL CHECK (length(root) = 32),
  updated_at BIGINT NOT NULL
);
