CREATE TABLE rollout_documents (
  kind TEXT NOT NULL CHECK (kind IN ('profile', 'plan')),
  project TEXT NOT NULL,
  version INTEGER NOT NULL,
  document TEXT NOT NULL,
  jws TEXT NOT NULL,
  hash TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  kid TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (kind, project, version)
) STRICT;
CREATE TABLE rollout_projects (
  project TEXT PRIMARY KEY,
  client_id TEXT UNIQUE,
  verification TEXT,
  attestation TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
