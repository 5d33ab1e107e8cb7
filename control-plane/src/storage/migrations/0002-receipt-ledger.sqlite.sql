CREATE TABLE receipts (
  seq INTEGER PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE CHECK (length(hash) = 64),
  tree_key BLOB NOT NULL CHECK (length(tree_key) = 32),
  body TEXT NOT NULL,
  kind TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  epoch INTEGER,
  tree_index INTEGER,
  path BLOB,
  CHECK ((epoch IS NULL) = (tree_index IS NULL) AND (epoch IS NULL) = (path IS NULL))
) STRICT;
CREATE INDEX receipts_pending ON receipts (seq) WHERE epoch IS NULL;
CREATE UNIQUE INDEX receipts_by_epoch_key ON receipts (epoch, tree_key) WHERE epoch IS NOT NULL;
CREATE TABLE receipt_checkpoints (
  epoch INTEGER PRIMARY KEY CHECK (epoch >= 1),
  jws TEXT NOT NULL,
  root TEXT NOT NULL,
  size INTEGER NOT NULL,
  prev TEXT,
  sealed_at INTEGER NOT NULL
) STRICT;
