import type { Migration } from '../sqlite/migrations.js';

/**
 * PostgreSQL's versioned schema changes. Version N here is the same change as SQLite's
 * migration N (same tables, same column names and encodings, so rows.ts maps both): epoch
 * milliseconds are BIGINT, booleans 0/1 integers, JSON text, byte strings BYTEA.
 * Never edit a released migration: add the next one, on both backends.
 */
export const migrations: Migration[] = [
  {
    version: 1,
    name: 'signing keys',
    sql: `
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
    `,
  },
  {
    version: 2,
    name: 'receipt ledger',
    sql: `
      CREATE TABLE receipts (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE CHECK (length(hash) = 64),
        tree_key BYTEA NOT NULL CHECK (length(tree_key) = 32),
        body TEXT NOT NULL,
        kind TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        epoch BIGINT,
        tree_index INTEGER,
        path BYTEA,
        CHECK ((epoch IS NULL) = (tree_index IS NULL) AND (epoch IS NULL) = (path IS NULL))
      );
      CREATE INDEX receipts_pending ON receipts (seq) WHERE epoch IS NULL;
      CREATE UNIQUE INDEX receipts_by_epoch_key ON receipts (epoch, tree_key) WHERE epoch IS NOT NULL;
      CREATE TABLE receipt_checkpoints (
        epoch BIGINT PRIMARY KEY CHECK (epoch >= 1),
        jws TEXT NOT NULL,
        root TEXT NOT NULL,
        size INTEGER NOT NULL,
        prev TEXT,
        sealed_at BIGINT NOT NULL
      );
    `,
  },
  {
    version: 3,
    name: 'identities, passkeys, sessions and devices',
    sql: `
      CREATE TABLE identities (
        identity_id TEXT PRIMARY KEY,
        username TEXT NOT NULL UNIQUE,
        display_name TEXT NOT NULL DEFAULT '',
        preferences TEXT NOT NULL DEFAULT '{}',
        founder INTEGER NOT NULL DEFAULT 0 CHECK (founder IN (0, 1)),
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
      CREATE UNIQUE INDEX identities_one_founder ON identities (founder) WHERE founder = 1;
      -- The name is claimed before its identity row is written (a unique claim decides a race),
      -- so the reference is checked at commit.
      CREATE TABLE identity_names (
        name TEXT PRIMARY KEY,
        identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
        current INTEGER NOT NULL CHECK (current IN (0, 1)),
        created_at BIGINT NOT NULL
      );
      CREATE INDEX identity_names_by_identity ON identity_names (identity_id, created_at);
      CREATE TABLE passkeys (
        cred_id TEXT PRIMARY KEY,
        identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
        public_key BYTEA NOT NULL,
        counter BIGINT NOT NULL,
        transports TEXT NOT NULL DEFAULT '[]',
        backup_eligible INTEGER NOT NULL,
        backed_up INTEGER NOT NULL,
        label TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        last_used_at BIGINT
      );
      CREATE INDEX passkeys_by_identity ON passkeys (identity_id, created_at);
      CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        token_hash TEXT NOT NULL UNIQUE,
        identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
        device_id TEXT NOT NULL,
        assurance TEXT NOT NULL CHECK (assurance IN ('recovery', 'email', 'passkey')),
        amr TEXT NOT NULL,
        auth_time BIGINT NOT NULL,
        step_up_at BIGINT,
        cred_id TEXT,
        created_at BIGINT NOT NULL,
        last_seen_at BIGINT NOT NULL,
        idle_expires_at BIGINT NOT NULL,
        absolute_expires_at BIGINT NOT NULL,
        revoked_at BIGINT
      );
      CREATE INDEX sessions_by_identity ON sessions (identity_id, device_id);
      CREATE TABLE devices (
        identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
        device_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        last_seen_at BIGINT NOT NULL,
        PRIMARY KEY (identity_id, device_id)
      );
    `,
  },
  {
    version: 4,
    name: 'totp, recovery codes, email addresses and one-time links',
    sql: `
      CREATE TABLE totp_secrets (
        identity_id TEXT PRIMARY KEY REFERENCES identities (identity_id) ON DELETE CASCADE,
        state TEXT NOT NULL CHECK (state IN ('pending', 'active')),
        sealed_secret BYTEA NOT NULL,
        last_used_step BIGINT,
        created_at BIGINT NOT NULL,
        activated_at BIGINT
      );
      CREATE TABLE recovery_codes (
        code_id TEXT PRIMARY KEY,
        identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
        code_hash TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        used_at BIGINT
      );
      CREATE INDEX recovery_codes_by_identity ON recovery_codes (identity_id);
      CREATE TABLE emails (
        email_id TEXT PRIMARY KEY,
        identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
        email TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        verified_at BIGINT,
        UNIQUE (identity_id, email)
      );
      -- A verified address belongs to exactly one account: magic links resolve it to one identity.
      CREATE UNIQUE INDEX emails_verified_once ON emails (email) WHERE verified_at IS NOT NULL;
      CREATE TABLE one_time_links (
        token_hash TEXT PRIMARY KEY,
        purpose TEXT NOT NULL CHECK (purpose IN ('signin', 'verify_email')),
        identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
        email_id TEXT NOT NULL REFERENCES emails (email_id) ON DELETE CASCADE,
        device_id TEXT,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at BIGINT
      );
      CREATE INDEX one_time_links_by_expiry ON one_time_links (expires_at);
    `,
  },
  {
    version: 5,
    name: 'oidc clients',
    sql: `
      CREATE TABLE oidc_clients (
        client_id TEXT PRIMARY KEY,
        client_type TEXT NOT NULL CHECK (client_type IN ('public', 'confidential')),
        auth_method TEXT NOT NULL CHECK (auth_method IN ('none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt')),
        secret_hash TEXT,
        secret_issued_at BIGINT,
        metadata TEXT NOT NULL,
        owner_id TEXT,
        registration_token_hash TEXT NOT NULL,
        revision INTEGER NOT NULL CHECK (revision >= 1),
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        CHECK ((client_type = 'public') = (auth_method = 'none'))
      );
      CREATE INDEX oidc_clients_by_owner ON oidc_clients (owner_id) WHERE owner_id IS NOT NULL;
    `,
  },
  {
    version: 6,
    name: 'oidc codes, grants, refresh tokens and approvals',
    sql: `
      CREATE TABLE oidc_codes (
        code_hash TEXT PRIMARY KEY,
        client_id TEXT NOT NULL,
        redirect_uri TEXT NOT NULL,
        identity_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        scope TEXT NOT NULL,
        resource TEXT,
        nonce TEXT,
        code_challenge TEXT NOT NULL,
        dpop_jkt TEXT,
        assurance TEXT NOT NULL,
        amr TEXT NOT NULL,
        auth_time BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        consumed_at BIGINT,
        grant_id TEXT
      );
      CREATE INDEX oidc_codes_by_expiry ON oidc_codes (expires_at);
      CREATE TABLE oidc_grants (
        grant_id TEXT PRIMARY KEY,
        client_id TEXT NOT NULL,
        identity_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        scope TEXT NOT NULL,
        resource TEXT,
        assurance TEXT NOT NULL,
        amr TEXT NOT NULL,
        auth_time BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        revoked_at BIGINT
      );
      CREATE TABLE oidc_refresh_tokens (
        token_hash TEXT PRIMARY KEY,
        grant_id TEXT NOT NULL REFERENCES oidc_grants (grant_id) ON DELETE CASCADE,
        dpop_jkt TEXT,
        created_at BIGINT NOT NULL,
        idle_expires_at BIGINT NOT NULL,
        used_at BIGINT
      );
      CREATE INDEX oidc_refresh_tokens_by_grant ON oidc_refresh_tokens (grant_id);
      CREATE TABLE oidc_revoked_access_tokens (
        jti TEXT PRIMARY KEY,
        expires_at BIGINT NOT NULL
      );
      CREATE TABLE oidc_approvals (
        identity_id TEXT NOT NULL,
        client_id TEXT NOT NULL,
        scope TEXT NOT NULL,
        approved_at BIGINT NOT NULL,
        PRIMARY KEY (identity_id, client_id)
      );
    `,
  },
  {
    version: 7,
    name: 'gateway configs issued and gateway evidence',
    sql: `
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
    `,
  },
  {
    version: 10,
    name: 'sessions by revocation time (gateway deny lists)',
    sql: `
      CREATE INDEX sessions_by_revoked_at ON sessions (revoked_at) WHERE revoked_at IS NOT NULL;
    `,
  },
  {
    version: 15,
    name: 'approvals remember the resources approved',
    sql: `
      -- An approval covers a request only for the resources the user saw named (RFC 8707):
      -- earlier approvals named none, so a request with a resource asks again.
      ALTER TABLE oidc_approvals ADD COLUMN resources TEXT NOT NULL DEFAULT '[]';
    `,
  },
  {
    version: 16,
    name: 'grants end with the session that started them',
    sql: `
      -- offline = 1 only where the user approved offline_access for a client that is not a
      -- gateway; every other grant is revoked when its session ends, or its client is revoked.
      ALTER TABLE oidc_codes ADD COLUMN offline INTEGER NOT NULL DEFAULT 0 CHECK (offline IN (0, 1));
      ALTER TABLE oidc_grants ADD COLUMN offline INTEGER NOT NULL DEFAULT 0 CHECK (offline IN (0, 1));
      CREATE INDEX oidc_codes_by_session ON oidc_codes (session_id);
      CREATE INDEX oidc_codes_by_client ON oidc_codes (client_id);
      CREATE INDEX oidc_grants_by_session ON oidc_grants (session_id);
      CREATE INDEX oidc_grants_by_client ON oidc_grants (client_id);
    `,
  },
  {
    version: 20,
    name: 'account state',
    sql: `
      -- An account is active or disabled (an operator's pause); a deleted account has no row.
      ALTER TABLE identities ADD COLUMN state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled'));
      CREATE INDEX oidc_grants_by_identity ON oidc_grants (identity_id);
      CREATE INDEX oidc_codes_by_identity ON oidc_codes (identity_id);
      CREATE INDEX oidc_approvals_by_identity ON oidc_approvals (identity_id);
    `,
  },
  {
    version: 30,
    name: 'agent identity',
    sql: `
      CREATE TABLE agent_enrollments (
        enrollment_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        subject_kind TEXT NOT NULL,
        public_jwk TEXT NOT NULL,
        jkt TEXT NOT NULL,
        alg TEXT NOT NULL CHECK (alg IN ('ES256', 'EdDSA')),
        visibility TEXT NOT NULL CHECK (visibility IN ('private', 'unlisted', 'public')),
        owner_code_hash TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending_approval', 'approved', 'completed', 'expired')),
        owner_id TEXT,
        approved_at BIGINT,
        agent_id TEXT,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
      );
      CREATE INDEX agent_enrollments_by_owner ON agent_enrollments (owner_id, state);
      CREATE TABLE agents (
        agent_id TEXT PRIMARY KEY,
        proof_id TEXT NOT NULL UNIQUE,
        owner_id TEXT NOT NULL,
        name TEXT NOT NULL,
        subject_kind TEXT NOT NULL,
        public_jwk TEXT NOT NULL,
        jkt TEXT NOT NULL,
        alg TEXT NOT NULL CHECK (alg IN ('ES256', 'EdDSA')),
        state TEXT NOT NULL CHECK (state IN ('active', 'suspended', 'compromised', 'revoked')),
        visibility TEXT NOT NULL CHECK (visibility IN ('private', 'unlisted', 'public')),
        declared TEXT NOT NULL DEFAULT '{}',
        resume_needs_key INTEGER NOT NULL DEFAULT 0 CHECK (resume_needs_key IN (0, 1)),
        key_proven_at BIGINT,
        owner_approved_at BIGINT,
        last_proof_at BIGINT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
      CREATE INDEX agents_by_owner ON agents (owner_id, created_at);
      -- Appended, never updated: each entry ages on its own.
      CREATE TABLE agent_evidence (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        agent_id TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('domain-control', 'descriptor-integrity')),
        at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        detail TEXT NOT NULL
      );
      CREATE INDEX agent_evidence_by_agent ON agent_evidence (agent_id, seq);
      CREATE TABLE agent_transfers (
        agent_id TEXT PRIMARY KEY,
        from_owner_id TEXT NOT NULL,
        to_identity_id TEXT NOT NULL,
        code_hash TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
      );
      CREATE TABLE agent_grants (
        grant_id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        owner_id TEXT NOT NULL,
        client_id TEXT NOT NULL,
        resource TEXT,
        scope TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
      );
      CREATE INDEX agent_grants_by_agent ON agent_grants (agent_id);
    `,
  },
  {
    version: 50,
    name: 'organizations, members, invites, sites and scans',
    sql: `
      CREATE TABLE orgs (
        org_id TEXT PRIMARY KEY,
        slug TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        website TEXT,
        created_at BIGINT NOT NULL
      );
      CREATE TABLE org_members (
        org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
        identity_id TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('member', 'admin', 'owner')),
        added_at BIGINT NOT NULL,
        PRIMARY KEY (org_id, identity_id)
      );
      CREATE INDEX org_members_by_identity ON org_members (identity_id);
      CREATE TABLE org_invites (
        org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
        identity_id TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('member', 'admin', 'owner')),
        invited_by TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (org_id, identity_id)
      );
      CREATE INDEX org_invites_by_identity ON org_invites (identity_id);
      CREATE TABLE org_sites (
        site_id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
        url TEXT NOT NULL,
        origin TEXT NOT NULL,
        label TEXT,
        is_primary INTEGER NOT NULL DEFAULT 0 CHECK (is_primary IN (0, 1)),
        proof_token TEXT NOT NULL,
        verified_at BIGINT,
        created_at BIGINT NOT NULL
      );
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
        scanned_at BIGINT NOT NULL
      );
      CREATE INDEX scans_by_site ON scans (site_id, scanned_at);
      CREATE INDEX scans_public_by_url ON scans (url, scanned_at) WHERE site_id IS NULL;
    `,
  },
  {
    version: 75,
    name: 'SAML identity provider: RSA signing keys and service providers',
    sql: `
      CREATE TABLE saml_keys (
        kid TEXT PRIMARY KEY,
        state TEXT NOT NULL CHECK (state IN ('next', 'current', 'retired')),
        certificate_pem TEXT NOT NULL,
        sealed_private_key BYTEA NOT NULL,
        created_at BIGINT NOT NULL,
        activated_at BIGINT,
        retired_at BIGINT,
        not_after BIGINT NOT NULL
      );
      CREATE TABLE saml_providers (
        id TEXT PRIMARY KEY,
        entity_id TEXT NOT NULL UNIQUE,
        name TEXT,
        acs_urls TEXT NOT NULL,
        slo_url TEXT,
        certificate_pem TEXT NOT NULL,
        name_id_format TEXT NOT NULL,
        attributes TEXT NOT NULL,
        allow_idp_initiated INTEGER NOT NULL CHECK (allow_idp_initiated IN (0, 1)),
        want_signed_requests INTEGER NOT NULL CHECK (want_signed_requests IN (0, 1)),
        org_id TEXT REFERENCES orgs (org_id) ON DELETE CASCADE,
        revision INTEGER NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
      CREATE INDEX saml_providers_by_org ON saml_providers (org_id, created_at);
    `,
  },
  {
    version: 85,
    name: 'rollout documents and projects',
    sql: `
      CREATE TABLE rollout_documents (
        kind TEXT NOT NULL CHECK (kind IN ('profile', 'plan')),
        project TEXT NOT NULL,
        version BIGINT NOT NULL,
        document TEXT NOT NULL,
        jws TEXT NOT NULL,
        hash TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        kid TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (kind, project, version)
      );
      CREATE TABLE rollout_projects (
        project TEXT PRIMARY KEY,
        client_id TEXT UNIQUE,
        verification TEXT,
        attestation TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
    `,
  },
  {
    version: 90,
    name: 'contact messages',
    sql: `
      CREATE TABLE contacts (
        contact_id TEXT PRIMARY KEY,
        email TEXT NOT NULL,
        topic TEXT NOT NULL,
        message TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        mailed_at BIGINT
      );
      CREATE INDEX contacts_by_time ON contacts (created_at);
    `,
  },
  {
    version: 91,
    name: 'back-channel logout: session participants and the logout outbox',
    sql: `
      -- OpenID Connect Back-Channel Logout 1.0. Clients that got an ID token in a session outside a
      -- grant (FedCM); grants already name their session.
      CREATE TABLE session_participants (
        session_id TEXT NOT NULL,
        client_id TEXT NOT NULL,
        identity_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (session_id, client_id)
      );
      CREATE INDEX session_participants_by_time ON session_participants (created_at);
      -- The outbox: one logout token per (session, client), written in the transaction that ended
      -- the session, delivered by whichever replica leases it (lease_holder, lease_until).
      CREATE TABLE backchannel_logouts (
        logout_id TEXT PRIMARY KEY,
        client_id TEXT NOT NULL,
        identity_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        jti TEXT NOT NULL UNIQUE,
        created_at BIGINT NOT NULL,
        attempts BIGINT NOT NULL,
        next_attempt_at BIGINT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'abandoned')),
        last_error TEXT,
        finished_at BIGINT,
        lease_holder TEXT,
        lease_until BIGINT,
        UNIQUE (session_id, client_id)
      );
      CREATE INDEX backchannel_logouts_due ON backchannel_logouts (next_attempt_at) WHERE state = 'pending';
      CREATE INDEX backchannel_logouts_finished ON backchannel_logouts (finished_at) WHERE finished_at IS NOT NULL;
    `,
  },
];
