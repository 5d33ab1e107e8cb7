// Connections: upstream identity providers (docs/federation.md), who signs in through them, and
// which sessions they started.

export type ConnectionType = 'oidc' | 'saml';

/** An OIDC connection's settings (docs/federation.md#oidc-connections). */
export interface OidcConnectionSettings {
  /** The upstream's issuer, exactly as its discovery document states it. */
  issuer: string;
  clientId: string;
  tokenEndpointAuthMethod: 'client_secret_basic' | 'private_key_jwt';
  scopes: string[];
  /** Narrows a multi-tenant issuer to one tenant. */
  tenant?: { hd?: string; tid?: string };
  /** The public half of the private_key_jwt key, published at `/federation/{connectionId}/jwks`. */
  publicJwk?: Record<string, unknown>;
}

/** A SAML connection's settings (docs/federation.md#saml-connections): what the IdP's metadata said. */
export interface SamlConnectionSettings {
  idpEntityId: string;
  /** The IdP's SingleSignOnService of the HTTP-Redirect binding. */
  ssoUrl: string;
  /** Its SingleLogoutService of the HTTP-Redirect binding, when it has one. */
  sloUrl?: string;
  /** The IdP's signing certificates (PEM), pinned from its metadata. */
  certificatesPem: string[];
  /** The earliest expiry of those certificates (ms). */
  certificatesNotAfter: number;
  /** Where the metadata was read from, when given as a URL (read again on a schedule). */
  metadataUrl?: string;
  metadataReadAt: number;
  /** IdP-initiated responses restart as SP-initiated sign-ins instead of being refused. */
  allowIdpInitiated: boolean;
}

export interface StoredConnection {
  connectionId: string;
  /** The org that added it, or null for an instance-wide connection (the operator's). */
  orgId: string | null;
  type: ConnectionType;
  name: string;
  /** The type's settings (OIDC: {@link OidcConnectionSettings}, SAML: {@link SamlConnectionSettings}). */
  settings: Record<string, unknown>;
  /** The client secret or private key, sealed for this connection; null when it has none. */
  secretSealed: Buffer | null;
  /** Proved mail domains of the org this connection serves (home-realm discovery, JIT). */
  domains: string[];
  jit: { role: 'member' } | null;
  required: boolean;
  maxAssurance: 'email' | 'passkey';
  /** Required SSO (docs/federation.md#required-sso): the longest session of a managed account, 1 to 12 hours. */
  sessionMaxHours: number;
  createdAt: number;
  updatedAt: number;
}

/** The upstream session behind a federated session: keyed hashes of its ID token's `sid` and `sub`, and that ID token sealed. */
export interface UpstreamSession {
  sidHash: string | null;
  subHash: string | null;
  idTokenSealed: Buffer | null;
}

export interface ConnectionStore {
  insert(connection: StoredConnection): Promise<void>;
  get(connectionId: string): Promise<StoredConnection | null>;
  /** The operator's connections (`orgId` null) or one org's, oldest first. */
  list(orgId: string | null): Promise<StoredConnection[]>;
  /** The org connection whose domains hold this (lower-cased) mail domain; null when none does. */
  forDomain(domain: string): Promise<StoredConnection | null>;
  update(connection: StoredConnection): Promise<void>;
  /** Deletes it with its linked identities; false when there was none. */
  remove(connectionId: string): Promise<boolean>;
  /** The account a federated identity is, by the keyed hash of its upstream subject. */
  findIdentity(connectionId: string, subjectHash: string): Promise<string | null>;
  /** Links a federated identity to an account; false when that identity is linked already. */
  link(connectionId: string, subjectHash: string, identityId: string, at: number): Promise<boolean>;
  /** Whether any federated identity of the connection is linked to this account. */
  isLinked(connectionId: string, identityId: string): Promise<boolean>;
  /** The connections an account is linked to, with when each link was made, oldest first. */
  linksOf(identityId: string): Promise<Array<{ connectionId: string; linkedAt: number }>>;
  /** Removes every link of the account to the connection; false when there was none. */
  unlink(connectionId: string, identityId: string): Promise<boolean>;
  /**
   * Records that a session's sign-in came through the connection (replacing an earlier one), with
   * the upstream session it came from when known (docs/federation.md#signing-out).
   */
  markSession(sessionId: string, connectionId: string, at: number, upstream?: UpstreamSession): Promise<void>;
  /** The upstream session a session's latest sign-in came from, or null (none, or an older sign-in). */
  sessionUpstream(sessionId: string): Promise<({ connectionId: string } & UpstreamSession) | null>;
  /**
   * The sessions live at `now` that an upstream session started, by the keyed hash of its `sid`,
   * else of its `sub` (an upstream back-channel logout token names one or both).
   */
  sessionsOfUpstream(
    connectionId: string,
    by: { sidHash?: string; subHash?: string },
    now: number,
  ): Promise<Array<{ sessionId: string; identityId: string }>>;
  /** The connection a session's sign-in came through, or null. */
  sessionConnection(sessionId: string): Promise<string | null>;
  /** The connection a session's latest upstream sign-in came through and when, or null. */
  sessionSignIn(sessionId: string): Promise<{ connectionId: string; signedInAt: number } | null>;
}
