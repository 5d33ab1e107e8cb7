CREATE TABLE signing_keys (
  kid TEXT PRIMARY KEY,
  alg TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('next', 'current', 'retired')),
  public_jwk TEXT NOT NULL,
  sealed_private_jwk BLOB NOT NULL,
  created_at INTEGER NOT NULL,
  activated_at INTEGER,
  retired_at INTEGER
) STRICT;
