CREATE TABLE gateway_configs (
  client_id TEXT NOT NULL,
  version INTEGER NOT NULL CHECK (version >= 1),
  jws TEXT NOT NULL,
  hash TEXT NOT NULL,
  policy_hash TEXT NOT NULL,
  policy TEXT NOT NULL,
  kid TEXT NOT NULL,
  issued_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (client_id, version)
);
CREATE TABLE gateway_evidence (
  client_id TEXT NOT NULL,
  instance TEXT NOT NULL,
  gateway TEXT NOT NULL,
  key_thumbprint TEXT NOT NULL,
  jti TEXT NOT NULL,
  issued_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  received_at BIGINT NOT NULL,
  config TEXT,
  counts TEXT NOT NULL,
  last_enforcement_at BIGINT,
  started_at BIGINT NOT NULL,
  jws TEXT NOT NULL,
  PRIMARY KEY (client_id, instance)
);
CREATE INDEX gateway_evidence_by_received ON gateway_evidence (client_id, received_at);
