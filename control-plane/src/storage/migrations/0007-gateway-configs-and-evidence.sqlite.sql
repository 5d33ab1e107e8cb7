-- Declared: every config issued to a gateway client. (client_id, version) is the key, so
-- two concurrent issues can never give one version two contents.
CREATE TABLE gateway_configs (
  client_id TEXT NOT NULL,
  version INTEGER NOT NULL CHECK (version >= 1),
  jws TEXT NOT NULL,
  hash TEXT NOT NULL,
  policy_hash TEXT NOT NULL,
  policy TEXT NOT NULL,
  kid TEXT NOT NULL,
  issued_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (client_id, version)
) STRICT;
-- Observed: the newest evidence per gateway instance, apart from what was declared.
CREATE TABLE gateway_evidence (
  client_id TEXT NOT NULL,
  instance TEXT NOT NULL,
  gateway TEXT NOT NULL,
  key_thumbprint TEXT NOT NULL,
  jti TEXT NOT NULL,
  issued_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  config TEXT,
  counts TEXT NOT NULL,
  last_enforcement_at INTEGER,
  started_at INTEGER NOT NULL,
  jws TEXT NOT NULL,
  PRIMARY KEY (client_id, instance)
) STRICT;
CREATE INDEX gateway_evidence_by_received ON gateway_evidence (client_id, received_at);
