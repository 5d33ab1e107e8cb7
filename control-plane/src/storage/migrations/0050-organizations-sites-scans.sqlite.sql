CREATE TABLE orgs (
  org_id TEXT PRIMARY KEY,
  slug TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  website TEXT,
  created_at INTEGER NOT NULL
) STRICT;
CREATE TABLE org_members (
  org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
  identity_id TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('member', 'admin', 'owner')),
  added_at INTEGER NOT NULL,
  PRIMARY KEY (org_id, identity_id)
) STRICT;
CREATE INDEX org_members_by_identity ON org_members (identity_id);
CREATE TABLE org_invites (
  org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
  identity_id TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('member', 'admin', 'owner')),
  invited_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (org_id, identity_id)
) STRICT;
CREATE INDEX org_invites_by_identity ON org_invites (identity_id);
CREATE TABLE org_sites (
  site_id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  origin TEXT NOT NULL,
  label TEXT,
  is_primary INTEGER NOT NULL DEFAULT 0 CHECK (is_primary IN (0, 1)),
  proof_token TEXT NOT NULL,
  verified_at INTEGER,
  created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX org_sites_by_org ON org_sites (org_id, created_at);
CREATE INDEX org_sites_by_origin ON org_sites (origin);
-- At most one primary site per org.
CREATE UNIQUE INDEX org_sites_one_primary ON org_sites (org_id) WHERE is_primary = 1;
CREATE TABLE scans (
  scan_id TEXT PRIMARY KEY,
  site_id TEXT,
  url TEXT NOT NULL,
  grade TEXT NOT NULL,
  score INTEGER NOT NULL,
  rating TEXT NOT NULL,
  scanned_at INTEGER NOT NULL
) STRICT;
CREATE INDEX scans_by_site ON scans (site_id, scanned_at);
CREATE INDEX scans_public_by_url ON scans (url, scanned_at) WHERE site_id IS NULL;
