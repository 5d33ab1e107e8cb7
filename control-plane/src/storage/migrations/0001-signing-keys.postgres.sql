CREATE TABLE signing_keys (
  kid TEXT PRIMARY KEY,
  alg TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('next', 'current', 'retired')),
  public_jwk TEXT NOT NULL,
  sealed_private_jwk BYTEA NOT NULL,
  created_at BIGINT NOT NULL,
  activated_at BIGINT,
  retired_at BIGINT
);
