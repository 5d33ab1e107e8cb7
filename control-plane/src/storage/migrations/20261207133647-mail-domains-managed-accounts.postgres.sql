-- Mail domains an org proves by DNS TXT, apart from its sites (docs/orgs.md#mail-domains). Several
-- orgs may hold a pending proof of one domain; only one holds it verified (the partial unique index).
CREATE TABLE org_mail_domains (
  domain_id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
  domain TEXT NOT NULL,
  proof_token TEXT NOT NULL,
  verified_at BIGINT,
  checked_at BIGINT,
  failing_since BIGINT,
  created_at BIGINT NOT NULL,
  UNIQUE (org_id, domain)
);
CREATE UNIQUE INDEX org_mail_domains_claimed ON org_mail_domains (domain) WHERE verified_at IS NOT NULL;
-- The org that manages an account (created by its JIT or SCIM); null for a personal account.
ALTER TABLE identities ADD COLUMN managed_by TEXT;
CREATE INDEX identities_managed_by ON identities (managed_by) WHERE managed_by IS NOT NULL;
