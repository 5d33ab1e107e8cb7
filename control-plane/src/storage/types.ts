import type { JWK } from 'jose';
import type { OrgRule } from '#lib/access/evaluate-access.js';
import type { VerifiedEvidence } from '#lib/gateway-protocol/evidence.js';
import type { ClientMetadata, ClientType, GatewayPolicy } from '#lib/oauth/client-metadata.js';
import type { LinkRecord } from '#lib/magic/magic-link.js';
import type { Approval } from '#lib/oauth/authorization-request.js';

/**
 * Storage is one small interface per resource. Methods are async so that a PostgreSQL backend
 * is an addition; the SQLite backend answers from prepared statements.
 */

export type KeyState = 'next' | 'current' | 'retired';

export interface StoredSigningKey {
  kid: string;
  alg: 'ES256';
  state: KeyState;
  publicJwk: JWK;
  /** The private JWK as JSON, sealed with the master key (AES-256-GCM, bound to the kid). */
  sealedPrivateJwk: Buffer;
  createdAt: number;
  activatedAt: number | null;
  retiredAt: number | null;
}

export interface KeyStore {
  list(): Promise<StoredSigningKey[]>;
  /**
   * Inside a transaction: holds, until it ends, the lock that lets one control plane change the
   * signing-key ring at a time (PostgreSQL advisory lock; SQLite's write transaction already is one).
   */
  lockRing(): Promise<void>;
  insert(key: StoredSigningKey): Promise<void>;
  /** Moves keys between states; only the listed kids change. */
  setState(kid: string, state: KeyState, at: number): Promise<void>;
  remove(kid: string): Promise<void>;
}

// ---- passkey accounts (docs/accounts.md) ----

export interface Identity {
  /** Stable account id: the `sub` of every token (`usr_…`). */
  identityId: string;
  /** Current username, folded to lower case (see lib/accounts/username.ts). */
  username: string;
  displayName: string;
  preferences: Record<string, string>;
  founder: boolean;
  createdAt: number;
  updatedAt: number;
}

export interface IdentityStore {
  /** Inserts the identity and claims its username; false when the name (or an alias) is taken. */
  create(identity: Identity): Promise<boolean>;
  get(identityId: string): Promise<Identity | null>;
  /** Resolves a folded username or previous username (alias). */
  findByUsername(folded: string): Promise<Identity | null>;
  /** Previous usernames that still resolve to this identity, oldest first. */
  aliases(identityId: string): Promise<string[]>;
  /** Makes `folded` the username; the old one stays an alias. False when another identity holds the name. */
  rename(identityId: string, folded: string, at: number): Promise<boolean>;
  setDisplayName(identityId: string, displayName: string, at: number): Promise<void>;
  setPreferences(identityId: string, preferences: Record<string, string>, at: number): Promise<void>;
  count(): Promise<number>;
  founderExists(): Promise<boolean>;
  /** The account's state; null when there is no such identity (never was, or deleted). */
  state(identityId: string): Promise<AccountState | null>;
  /**
   * Username and state of many accounts in one read (the gateway's access directory, built at every
   * poll: two reads per member were seconds per poll for 10,000 members). Unknown ids are left out.
   */
  summaries(
    identityIds: readonly string[],
  ): Promise<Array<{ identityId: string; username: string; state: AccountState }>>;
  /** Sets the state; false when the identity is unknown or already in that state. */
  setState(identityId: string, state: AccountState, at: number): Promise<boolean>;
  /**
   * Deletes the identity with everything that hangs on it by foreign key: names and aliases (the
   * username is free again), passkeys, sessions, devices, TOTP, recovery codes, emails, links.
   */
  remove(identityId: string): Promise<boolean>;
}

/** `active`, or `disabled` by an operator: a disabled account cannot sign in and none of its grants work. */
export type AccountState = 'active' | 'disabled';

export interface StoredCredential {
  /** base64url credential id. */
  credId: string;
  identityId: string;
  /** COSE public key; never listed, only read for verification. */
  publicKey: Uint8Array;
  counter: number;
  transports: string[];
  backupEligible: boolean;
  backedUp: boolean;
  label: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/** What listings show: everything but the public key. */
export type CredentialSummary = Omit<StoredCredential, 'publicKey'>;

export interface CredentialStore {
  /** False when the credential id exists already. */
  insert(credential: StoredCredential): Promise<boolean>;
  /** The full record (with the public key) for verification. */
  get(credId: string): Promise<StoredCredential | null>;
  listByIdentity(identityId: string): Promise<CredentialSummary[]>;
  countByIdentity(identityId: string): Promise<number>;
  rename(identityId: string, credId: string, label: string): Promise<boolean>;
  remove(identityId: string, credId: string): Promise<boolean>;
  recordUse(credId: string, use: { counter: number; backedUp: boolean; at: number }): Promise<void>;
}

export type SessionAssurance = 'recovery' | 'email' | 'passkey';

export interface StoredSession {
  /** Opaque identifier shown on the account page (never the cookie value). */
  sessionId: string;
  /** SHA-256 (hex) of the cookie value; the value itself is never stored. */
  tokenHash: string;
  identityId: string;
  deviceId: string;
  /** What the last sign-in proved (a magic link never lowers it); a step-up raises it to at least `passkey`. */
  assurance: SessionAssurance;
  amr: string[];
  authTime: number;
  stepUpAt: number | null;
  /** Passkey used for the sign-in or last step-up. */
  credId: string | null;
  createdAt: number;
  lastSeenAt: number;
  idleExpiresAt: number;
  absoluteExpiresAt: number;
  revokedAt: number | null;
}

/** What a session's renewal writes: the new token's hash and the state of the session after the authentication. */
export type SessionRenewal = Pick<
  StoredSession,
  | 'tokenHash'
  | 'assurance'
  | 'amr'
  | 'authTime'
  | 'stepUpAt'
  | 'credId'
  | 'lastSeenAt'
  | 'idleExpiresAt'
  | 'absoluteExpiresAt'
>;

export interface SessionStore {
  insert(session: StoredSession): Promise<void>;
  /** The session with this cookie hash when it is live at `now` (not revoked, not expired). */
  findLive(tokenHash: string, now: number): Promise<StoredSession | null>;
  listLive(identityId: string, now: number): Promise<StoredSession[]>;
  /** Whether the session is live at `now` (not revoked, not expired). */
  isLive(sessionId: string, now: number): Promise<boolean>;
  touch(sessionId: string, at: number, idleExpiresAt: number): Promise<void>;
  /**
   * Gives a live session a new token and what the authentication just proved, in ONE conditional
   * update (docs/security.md#session-tokens, ASVS 5.0 V7.2.4): the session id, identity, device
   * and creation time stay, and with them everything keyed by the id (grants, the gateways' deny
   * lists, receipts); the token presented before finds nothing afterwards. False when no live
   * session `sessionId` holds `presentedTokenHash` at `now`: ended, expired, or renewed already
   * by a concurrent request (of two renewals of the same token, one wins).
   */
  renewToken(sessionId: string, presentedTokenHash: string, renewal: SessionRenewal, now: number): Promise<boolean>;
  /** Revokes one live session of the identity; false when there is none with that id. */
  revoke(identityId: string, sessionId: string, at: number): Promise<boolean>;
  /** Revokes every live session of the identity on the device; returns how many. */
  revokeDevice(identityId: string, deviceId: string, at: number): Promise<number>;
  /**
   * Ids of sessions revoked at or after `since` that started a grant for the client (the sids its
   * ID tokens named), newest revocation first, at most `limit`: a gateway's deny list.
   */
  listRevokedForClient(clientId: string, since: number, limit: number): Promise<string[]>;
  /** Revokes every live session of the account; returns how many. */
  revokeAll(identityId: string, at: number): Promise<number>;
}

export interface Device {
  deviceId: string;
  identityId: string;
  createdAt: number;
  lastSeenAt: number;
  /** The User-Agent of its latest sign-in (at most 512 characters); null when none was sent. */
  userAgent: string | null;
}

/** The device ledger: which devices an identity has signed in from. */
export interface DeviceStore {
  /** Records a sign-in from the device; a `userAgent` replaces the one kept, none keeps it. */
  upsert(identityId: string, deviceId: string, at: number, userAgent?: string | null): Promise<void>;
  list(identityId: string): Promise<Device[]>;
  remove(identityId: string, deviceId: string): Promise<boolean>;
}

// ---- TOTP, recovery codes, email addresses and one-time links (docs/accounts.md) ----

export type TotpState = 'pending' | 'active';

export interface StoredTotp {
  identityId: string;
  state: TotpState;
  /** The base32 secret sealed with the master key (AES-256-GCM, bound to the identity id). */
  sealedSecret: Buffer;
  /** RFC 6238 time step of the last accepted code; a code of this step or earlier is a replay. */
  lastUsedStep: number | null;
  createdAt: number;
  activatedAt: number | null;
}

export interface TotpStore {
  get(identityId: string): Promise<StoredTotp | null>;
  /** Stores a fresh pending setup, replacing a pending one; false when TOTP is already active. */
  putPending(record: StoredTotp): Promise<boolean>;
  /** Pending to active, recording the step of the confirming code; false when it was not pending. */
  activate(identityId: string, step: number, at: number): Promise<boolean>;
  /** Records `step` as used if it is later than the last used one: one atomic update, true for one caller. */
  useStep(identityId: string, step: number): Promise<boolean>;
  remove(identityId: string): Promise<boolean>;
}

export interface StoredRecoveryCode {
  codeId: string;
  identityId: string;
  /** HMAC-SHA-256 (hex) of the normalized code under a key derived from the master key. */
  codeHash: string;
  createdAt: number;
  usedAt: number | null;
}

export interface RecoveryCodeStore {
  /** Drops every code of the identity (used or not) and stores the new set. */
  replace(identityId: string, codes: Array<{ codeId: string; codeHash: string }>, at: number): Promise<void>;
  listUnused(identityId: string): Promise<StoredRecoveryCode[]>;
  /** Marks the code used if it still is unused: one conditional update, true for exactly one caller. */
  consume(identityId: string, codeId: string, at: number): Promise<boolean>;
}

export interface StoredEmail {
  /** Opaque id (`eml_…`), what events carry instead of the address. */
  emailId: string;
  identityId: string;
  /** Lower-cased address. */
  email: string;
  createdAt: number;
  verifiedAt: number | null;
}

export interface EmailStore {
  /** Adds the address to the identity, or returns the row it already has. */
  add(record: StoredEmail): Promise<StoredEmail>;
  get(emailId: string): Promise<StoredEmail | null>;
  listByIdentity(identityId: string): Promise<StoredEmail[]>;
  /** The one identity's row where this (lower-cased) address is verified. */
  findVerified(email: string): Promise<StoredEmail | null>;
  /** `taken` when another account verified the address first: a verified address belongs to one account. */
  markVerified(emailId: string, at: number): Promise<'verified' | 'already' | 'taken'>;
}

/** A magic sign-in or email-verification link, stored by the SHA-256 of its token (see lib/magic). */
export type StoredLink = LinkRecord;

export interface LinkStore {
  insert(record: StoredLink): Promise<void>;
  find(tokenHash: string): Promise<StoredLink | null>;
  /** Marks the link used if it is unused and unexpired at `at`: true for exactly one caller. */
  consume(tokenHash: string, at: number): Promise<boolean>;
  /** Deletes links that expired before `before`; returns how many. */
  purgeExpired(before: number): Promise<number>;
}

/** A receipt as stored: its canonical JSON, address, tree key and (once sealed) its place. */
export interface StoredReceipt {
  hash: string;
  /** RFC 8785 canonical JSON of the receipt. */
  body: string;
  treeKey: Buffer;
  createdAt: number;
  /** Null until sealed. */
  epoch: number | null;
  index: number | null;
  /** RFC 9162 audit path in its epoch's tree; null until sealed. */
  path: Buffer[] | null;
}

/** A sealed epoch's signed checkpoint (the compact JWS) with the fields it signs. */
export interface StoredCheckpoint {
  epoch: number;
  jws: string;
  root: string;
  size: number;
  prev: string | null;
  sealedAt: number;
}

/** A sealed receipt's key and place, without its body (what proofs of absence show). */
export interface PlacedKey {
  index: number;
  treeKey: Buffer;
  path: Buffer[];
}

/**
 * The receipt ledger. Look-ups go by hash through an index only; nothing here lists receipts
 * except `epochReceipts`, which the offline audit uses and no route ever calls.
 */
export interface ReceiptStore {
  /**
   * Appends a receipt; call inside the transaction of the change it records. `body` is the
   * receipt's canonical JSON when the caller has it already (the hash was taken of it), so
   * the hot path serializes a receipt once.
   */
  append(receipt: { kind: string }, hash: string, createdAt: number, body?: string): Promise<void>;
  get(hash: string): Promise<StoredReceipt | undefined>;
  /** Up to `limit` unsealed receipts, oldest first. */
  pending(limit: number): Promise<Array<{ hash: string; treeKey: Buffer }>>;
  pendingCount(): Promise<number>;
  /**
   * Inside a transaction: waits for, then holds until the transaction ends, the one lock that
   * lets a single control plane seal at a time (PostgreSQL advisory lock; SQLite's write
   * transaction already excludes every other writer, so there it returns at once).
   */
  lockSealing(): Promise<void>;
  /** Places receipts in a sealed epoch; refuses any that is missing or already sealed. */
  assignEpoch(epoch: number, placements: Array<{ hash: string; index: number; path: Buffer[] }>): Promise<void>;
  insertCheckpoint(checkpoint: StoredCheckpoint): Promise<void>;
  checkpoint(epoch: number): Promise<StoredCheckpoint | undefined>;
  latestCheckpoint(): Promise<StoredCheckpoint | undefined>;
  /** The sealed keys either side of `treeKey` in `epoch` (the key itself when present is `match`). */
  neighbours(epoch: number, treeKey: Buffer): Promise<{ left?: PlacedKey; match?: PlacedKey; right?: PlacedKey }>;
  /** Every receipt of a sealed epoch (offline audit only). */
  epochReceipts(epoch: number): Promise<Array<{ hash: string; body: string; index: number }>>;
}

// ---- OIDC clients (docs/oidc.md, "Register a client") ----

export interface StoredClient {
  clientId: string;
  type: ClientType;
  /** Validated metadata (lib/oauth/client-metadata.ts); `token_endpoint_auth_method` inside is authoritative. */
  metadata: ClientMetadata;
  /** SHA-256 (hex) of the client secret, for client_secret_basic/post; the secret itself is never stored. */
  secretHash: string | null;
  secretIssuedAt: number | null;
  /** The identity that registered it, or null for the operator (admin token). */
  ownerId: string | null;
  /** SHA-256 (hex) of the RFC 7592 registration access token. */
  registrationTokenHash: string;
  /** Bumped by every update; an update must name the revision it was based on. */
  revision: number;
  createdAt: number;
  updatedAt: number;
}

export interface ClientStore {
  insert(client: StoredClient): Promise<void>;
  get(clientId: string): Promise<StoredClient | null>;
  /**
   * Replaces type, metadata and secret when the stored revision is still `expectedRevision`
   * (one conditional UPDATE) and returns the new record; null when the revision moved on or
   * the client is gone.
   */
  update(
    clientId: string,
    expectedRevision: number,
    change: {
      type: ClientType;
      metadata: ClientMetadata;
      secretHash: string | null;
      secretIssuedAt: number | null;
      at: number;
    },
  ): Promise<StoredClient | null>;
  remove(clientId: string): Promise<boolean>;
  listByOwner(ownerId: string): Promise<StoredClient[]>;
  /** Every client, by client id, `limit` at a time after `after` (exclusive): the operators' listing. */
  list(after: string | null, limit: number): Promise<StoredClient[]>;
  /** Every registered redirect URI of every client (for WebAuthn related origins). */
  allRedirectUris(): Promise<string[]>;
  /** The clients with in-place sign-in on (`in_place: true`), by client id. */
  listInPlace(): Promise<StoredClient[]>;
  /** Every client whose metadata carries a `gateway` policy. */
  listGateways(): Promise<StoredClient[]>;
  /** The clients that registered exactly this redirect URI. */
  findByRedirectUri(uri: string): Promise<StoredClient[]>;
}

// ---- OIDC provider: codes, grants, refresh tokens, approvals (docs/oidc.md) ----

/** An authorization code as stored: only its SHA-256 is the key; everything the token request must match. */
export interface StoredAuthorizationCode {
  codeHash: string;
  clientId: string;
  redirectUri: string;
  identityId: string;
  sessionId: string;
  scope: string;
  resource: string | null;
  nonce: string | null;
  codeChallenge: string;
  /** RFC 9449 §10 `dpop_jkt` from the authorization request. */
  dpopJkt: string | null;
  /** What the session proved when the code was issued. */
  assurance: 'recovery' | 'email' | 'passkey' | 'sensitive';
  amr: string[];
  authTime: number;
  createdAt: number;
  expiresAt: number;
  consumedAt: number | null;
  /** The grant (token family) created by the exchange; set once exchanged. */
  grantId: string | null;
  /**
   * The user approved `offline_access` on the one-tap page for a client that is not a gateway:
   * the grant outlives the session that started it (docs/security.md "Sign-out").
   */
  offline: boolean;
}

export type CodeConsumption =
  | { status: 'consumed'; code: StoredAuthorizationCode }
  | { status: 'replayed'; code: StoredAuthorizationCode }
  | { status: 'unknown' };

/** Everything issued from one authorization code: its refresh tokens and access tokens share its fate. */
export interface StoredGrant {
  grantId: string;
  clientId: string;
  identityId: string;
  sessionId: string;
  scope: string;
  resource: string | null;
  assurance: StoredAuthorizationCode['assurance'];
  amr: string[];
  authTime: number;
  createdAt: number;
  /** The refresh family's absolute end. */
  expiresAt: number;
  revokedAt: number | null;
  /** Outlives its session (see StoredAuthorizationCode.offline); otherwise it ends with it. */
  offline: boolean;
}

export interface StoredRefreshToken {
  tokenHash: string;
  grantId: string;
  /** RFC 9449 §5: a public client's refresh token is bound to its DPoP key. */
  dpopJkt: string | null;
  createdAt: number;
  idleExpiresAt: number;
  usedAt: number | null;
}

export type RefreshConsumption =
  | { status: 'consumed'; token: StoredRefreshToken }
  | { status: 'reused'; token: StoredRefreshToken }
  | { status: 'unknown' };

export interface OidcStore {
  insertCode(code: StoredAuthorizationCode): Promise<void>;
  /** The code as stored (spent or not), without spending it. */
  findCode(codeHash: string): Promise<StoredAuthorizationCode | null>;
  /**
   * Marks the code used if it is unused (one conditional UPDATE): `consumed` for exactly one
   * caller, `replayed` after. With `grantId`, the same update links the code to the grant its
   * exchange creates.
   */
  consumeCode(codeHash: string, at: number, grantId?: string): Promise<CodeConsumption>;
  insertGrant(grant: StoredGrant): Promise<void>;
  getGrant(grantId: string): Promise<StoredGrant | null>;
  /** Revokes the grant (its whole family); false when it was revoked already or is unknown. */
  revokeGrant(grantId: string, at: number): Promise<boolean>;
  /**
   * A session ended: revokes the live grants those sessions started (offline ones excepted) and
   * deletes their codes not yet exchanged. Returns the grants revoked now.
   */
  endSessionGrants(sessionIds: readonly string[], at: number): Promise<StoredGrant[]>;
  /** A client was revoked: revokes every live grant of it and deletes its codes not yet exchanged. */
  revokeClientGrants(clientId: string, at: number): Promise<StoredGrant[]>;
  insertRefreshToken(token: StoredRefreshToken): Promise<void>;
  findRefreshToken(tokenHash: string): Promise<StoredRefreshToken | null>;
  /** The refresh token with its grant, in one read (null when the token is unknown). */
  findRefreshGrant(tokenHash: string): Promise<{ token: StoredRefreshToken; grant: StoredGrant } | null>;
  /** Marks the refresh token used if it is unused (one conditional UPDATE). */
  consumeRefreshToken(tokenHash: string, at: number): Promise<RefreshConsumption>;
  /** Remembers a revoked access token (by jti) until it would have expired anyway. */
  revokeAccessToken(jti: string, expiresAt: number): Promise<void>;
  isAccessTokenRevoked(jti: string): Promise<boolean>;
  /** Remembers what the account approved for the client (replacing the earlier approval). */
  recordApproval(identityId: string, clientId: string, approval: Approval, at: number): Promise<void>;
  /** The scopes and resources the account approved for the client, or null. */
  approval(identityId: string, clientId: string): Promise<Approval | null>;
  /** The clients the account approved, in id order (FedCM `approved_clients`). */
  approvedClients(identityId: string): Promise<string[]>;
  /** Forgets the account's approval of the client; false when there was none. */
  removeApproval(identityId: string, clientId: string): Promise<boolean>;
  /** Revokes every live grant (refresh family) of the account; returns how many. */
  revokeGrantsOf(identityId: string, at: number): Promise<number>;
  /** Deletes the account's codes, grants (with their refresh tokens) and approvals. */
  forgetIdentity(identityId: string): Promise<void>;
  /** Deletes expired codes, refresh tokens and revoked-token markers; returns how many rows went. */
  purgeExpired(before: number): Promise<number>;
}

// ---- OpenID Connect Back-Channel Logout 1.0: who to tell when a session ends (docs/oidc.md#101-back-channel-logout) ----

/** A client that got tokens in a session: the session's `sid` and the account's `sub` for its logout token. */
export interface SessionParticipant {
  sessionId: string;
  clientId: string;
  identityId: string;
}

export type BackchannelLogoutState = 'pending' | 'delivered' | 'abandoned';

/** One logout token to deliver: the outbox row, written in the transaction that ended the session. */
export interface BackchannelLogout {
  logoutId: string;
  clientId: string;
  /** The logout token's `sub`. */
  identityId: string;
  /** The logout token's `sid`: the session id the client's ID tokens named. */
  sessionId: string;
  /** The logout token's `jti`, the same on every attempt, so the client can tell a retry from a new logout. */
  jti: string;
  createdAt: number;
  /** Attempts made so far. */
  attempts: number;
  nextAttemptAt: number;
  state: BackchannelLogoutState;
  /** Why the last attempt failed (a fetch reason or the answer's status), never a body. */
  lastError: string | null;
  finishedAt: number | null;
}

/** What one delivery attempt ended with. */
export interface LogoutAttempt {
  state: BackchannelLogoutState;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  finishedAt: number | null;
}

export interface LogoutStore {
  /** Remembers that the client got an ID token in the session outside a grant (a FedCM assertion). */
  recordParticipant(participant: SessionParticipant, at: number): Promise<void>;
  /** Every client that got tokens in one of the sessions: a grant of it, or a recorded participant. */
  participants(sessionIds: readonly string[]): Promise<SessionParticipant[]>;
  /** Queues a logout; false when one for the same session and client is queued already. */
  enqueue(logout: BackchannelLogout): Promise<boolean>;
  /**
   * Leases up to `limit` pending logouts due at `now` (or whose lease ran out) to `holder` until
   * `leaseUntil`, atomically: two replicas claiming at once never get the same row.
   */
  claimDue(now: number, holder: string, leaseUntil: number, limit: number): Promise<BackchannelLogout[]>;
  /** Records an attempt's outcome and ends the lease; false when `holder` no longer holds it. */
  finish(logoutId: string, holder: string, attempt: LogoutAttempt): Promise<boolean>;
  get(logoutId: string): Promise<BackchannelLogout | null>;
  /** The logouts queued for a session, oldest first. */
  listForSession(sessionId: string): Promise<BackchannelLogout[]>;
  /**
   * Deletes delivered or abandoned logouts finished before `finishedBefore`, and participants
   * recorded before `participantsBefore` (their sessions have ended by then). Returns how many rows went.
   */
  purge(finishedBefore: number, participantsBefore: number): Promise<number>;
}

// ---- edge-gate: issued configs (declared) and evidence (observed), kept apart (docs/gateway.md#evidence) ----

/** One signed gateway config as issued; a version, once issued, is never re-signed with other content. */
export interface IssuedGatewayConfig {
  clientId: string;
  version: number;
  /** The compact JWS, served byte for byte. */
  jws: string;
  /** SHA-256 hex of the JWS: what the gateway's evidence reports. */
  hash: string;
  /** SHA-256 hex of the policy's RFC 8785 canonical JSON. */
  policyHash: string;
  policy: GatewayPolicy;
  /** The control-plane key that signed it. */
  kid: string;
  issuedAt: number;
  expiresAt: number;
}

/** The newest signed evidence report of one gateway instance, as verified on arrival. */
export interface StoredGatewayEvidence extends VerifiedEvidence {
  receivedAt: number;
  /** The compact JWS as it arrived. */
  jws: string;
}

export interface GatewayStore {
  /** The highest version issued to the client, or null. */
  latestConfig(clientId: string): Promise<IssuedGatewayConfig | null>;
  /** False when the client has that version already (versions are unique per client). */
  insertConfig(config: IssuedGatewayConfig): Promise<boolean>;
  /**
   * Keeps the newest report per (client, instance): a report issued before the stored one
   * changes nothing (false), so a replayed old report cannot hide a newer one.
   */
  recordEvidence(evidence: StoredGatewayEvidence): Promise<boolean>;
  /** The client's instances, most recently heard from first (at most `limit`). */
  listEvidence(clientId: string, limit: number): Promise<StoredGatewayEvidence[]>;
  /** Drops the client's reports that expired before `expiredBefore` (ms): instances long gone. Returns how many. */
  forgetEvidence(clientId: string, expiredBefore: number): Promise<number>;
}

// ---- agent identity (docs/agents.md) ----

export type AgentVisibility = 'private' | 'unlisted' | 'public';
export type SubjectKind =
  'service_bot' | 'automation' | 'ai_agent' | 'hybrid_agent' | 'robot' | 'device' | 'agent_team' | 'ephemeral_subagent';

export interface StoredEnrollment {
  enrollmentId: string;
  name: string;
  subjectKind: SubjectKind;
  publicJwk: JWK;
  jkt: string;
  alg: 'ES256' | 'EdDSA';
  visibility: AgentVisibility;
  /** SHA-256 (hex) of the canonical owner code; the code itself is never stored. */
  ownerCodeHash: string;
  state: 'pending_approval' | 'approved' | 'completed' | 'expired';
  ownerId: string | null;
  approvedAt: number | null;
  agentId: string | null;
  createdAt: number;
  expiresAt: number;
}

export interface StoredAgent {
  agentId: string;
  /** Opaque public id of the Proof Link (128 bits, no prefix). */
  proofId: string;
  ownerId: string;
  name: string;
  subjectKind: SubjectKind;
  publicJwk: JWK;
  jkt: string;
  alg: 'ES256' | 'EdDSA';
  state: 'active' | 'suspended' | 'compromised' | 'revoked';
  visibility: AgentVisibility;
  /** Declared facts (a2aCardUrl, capabilities); a card discovery fills them only where empty. */
  declared: { a2aCardUrl?: string; capabilities?: string[] };
  /** Set by a transfer acceptance or a compromise recovery: resuming then needs the owner at `sensitive` and the agent key together. */
  resumeNeedsKey: boolean;
  keyProvenAt: number | null;
  ownerApprovedAt: number | null;
  lastProofAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface StoredAgentEvidence {
  agentId: string;
  type: 'domain-control' | 'descriptor-integrity';
  at: number;
  expiresAt: number;
  detail: Record<string, string>;
}

export interface StoredAgentTransfer {
  agentId: string;
  fromOwnerId: string;
  toIdentityId: string;
  codeHash: string;
  createdAt: number;
  expiresAt: number;
}

export interface StoredAgentGrant {
  /** `agg_…`; the prefix of the jti of every access token issued under it. */
  grantId: string;
  agentId: string;
  ownerId: string;
  clientId: string;
  resource: string | null;
  scope: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface AgentStore {
  insertEnrollment(enrollment: StoredEnrollment): Promise<void>;
  getEnrollment(enrollmentId: string): Promise<StoredEnrollment | null>;
  /** pending_approval → approved by `ownerId`, only while unexpired; false otherwise. */
  approveEnrollment(enrollmentId: string, ownerId: string, at: number): Promise<boolean>;
  /** approved → completed (one use), only while unexpired; false otherwise. */
  completeEnrollment(enrollmentId: string, agentId: string, at: number): Promise<boolean>;
  /** Enrollments this owner approved that are not completed or expired yet. */
  listApprovedEnrollments(ownerId: string, now: number): Promise<StoredEnrollment[]>;
  insertAgent(agent: StoredAgent): Promise<void>;
  get(agentId: string): Promise<StoredAgent | null>;
  getByProofId(proofId: string): Promise<StoredAgent | null>;
  listByOwner(ownerId: string): Promise<StoredAgent[]>;
  /** Writes `agent` only when the stored state is still `expectedState` (compare-and-set). */
  update(agent: StoredAgent, expectedState: StoredAgent['state']): Promise<boolean>;
  /** Records a successful key proof (verify, run) without touching anything else. */
  recordProof(agentId: string, at: number): Promise<void>;
  appendEvidence(entry: StoredAgentEvidence): Promise<void>;
  listEvidence(agentId: string): Promise<StoredAgentEvidence[]>;
  /** One pending transfer per agent: a new one replaces the old. */
  putTransfer(transfer: StoredAgentTransfer): Promise<void>;
  getTransfer(agentId: string): Promise<StoredAgentTransfer | null>;
  /** Deletes the transfer when it matches; true for exactly one caller. */
  consumeTransfer(agentId: string, codeHash: string, toIdentityId: string, now: number): Promise<boolean>;
  deleteTransfer(agentId: string): Promise<void>;
  insertGrant(grant: StoredAgentGrant): Promise<void>;
  getGrant(grantId: string): Promise<StoredAgentGrant | null>;
  listGrants(agentId: string): Promise<StoredAgentGrant[]>;
  revokeGrant(grantId: string, at: number): Promise<boolean>;
  /** Revokes every live grant of the agent; returns how many. */
  revokeGrants(agentId: string, at: number): Promise<number>;
}

// ---- organizations, sites and scans (docs/orgs.md) ----

export type OrgRole = 'member' | 'admin' | 'owner';

export interface StoredOrg {
  orgId: string;
  slug: string;
  name: string;
  website: string | null;
  createdAt: number;
}

export interface OrgMember {
  identityId: string;
  role: OrgRole;
  addedAt: number;
}

export interface OrgSite {
  siteId: string;
  orgId: string;
  /** An https origin plus path, as registered. */
  url: string;
  label: string | null;
  primary: boolean;
  /** The value the org publishes to prove control of the domain (DNS TXT or the well-known file). */
  proofToken: string;
  /** When control of the domain was last proved; null until then. */
  verifiedAt: number | null;
  createdAt: number;
}

export interface OrgInvite {
  orgId: string;
  identityId: string;
  role: OrgRole;
  invitedBy: string;
  createdAt: number;
}

export interface OrgStore {
  /** False when the slug is taken. The creator is stored as the first owner. */
  create(org: StoredOrg, ownerId: string): Promise<boolean>;
  getBySlug(slug: string): Promise<StoredOrg | null>;
  get(orgId: string): Promise<StoredOrg | null>;
  /** The orgs an identity belongs to, with its role. */
  listForMember(identityId: string): Promise<Array<StoredOrg & { role: OrgRole }>>;
  members(orgId: string): Promise<OrgMember[]>;
  member(orgId: string, identityId: string): Promise<OrgMember | null>;
  /** False when the identity is a member already. */
  addMember(orgId: string, member: OrgMember): Promise<boolean>;
  setRole(orgId: string, identityId: string, role: OrgRole): Promise<boolean>;
  removeMember(orgId: string, identityId: string): Promise<boolean>;
  countOwners(orgId: string): Promise<number>;
  /** One open invite per (org, identity): a new one replaces the old. */
  putInvite(invite: OrgInvite): Promise<void>;
  invitesFor(identityId: string): Promise<OrgInvite[]>;
  /** The org's open invites, oldest first (its dashboard lists them). */
  invitesOf(orgId: string): Promise<OrgInvite[]>;
  /** Removes and returns the invite (atomic: an invite is accepted once). */
  takeInvite(orgId: string, identityId: string): Promise<OrgInvite | null>;
  sites(orgId: string): Promise<OrgSite[]>;
  site(siteId: string): Promise<OrgSite | null>;
  addSite(site: OrgSite): Promise<void>;
  /** Makes `siteId` the org's only primary site; false when it is not the org's. */
  setPrimary(orgId: string, siteId: string): Promise<boolean>;
  removeSite(orgId: string, siteId: string): Promise<boolean>;
  markSiteVerified(siteId: string, at: number): Promise<void>;
  /** Every registered site whose URL has this origin (a seal looks its page's origin up). */
  sitesByOrigin(origin: string): Promise<OrgSite[]>;
  /** Every primary site, for the scheduled rescans. */
  primarySites(): Promise<OrgSite[]>;
}

export interface StoredScan {
  scanId: string;
  /** The registered site scanned, or null for a public scan. */
  siteId: string | null;
  url: string;
  grade: string;
  score: number;
  /** The signed Rating as served (JSON). */
  rating: string;
  scannedAt: number;
}

export interface ScanStore {
  record(scan: StoredScan): Promise<void>;
  latestForSite(siteId: string): Promise<StoredScan | null>;
  /** The site's scans, newest first. */
  historyForSite(siteId: string, limit: number): Promise<StoredScan[]>;
  /** The newest public scan of exactly this URL. */
  latestPublic(url: string): Promise<StoredScan | null>;
}

// ---- SAML 2.0 identity provider (docs/saml.md) ----

/** The IdP's RSA signing key: state as in the ES256 ring, the private key sealed with the master key. */
export interface StoredSamlKey {
  kid: string;
  state: KeyState;
  certificatePem: string;
  /** PKCS#8 PEM sealed with the master key (AES-256-GCM, bound to the kid). */
  sealedPrivateKey: Buffer;
  createdAt: number;
  activatedAt: number | null;
  retiredAt: number | null;
  /** The certificate's notAfter (ms). */
  notAfter: number;
}

/** A registered service provider; its certificate is pinned. */
export interface StoredSamlProvider {
  /** Opaque id (`sp_…`). */
  id: string;
  entityId: string;
  name: string | null;
  acsUrls: string[];
  sloUrl: string | null;
  certificatePem: string;
  nameIdFormat: string;
  /** SAML attribute name → the source it is filled from (docs/saml.md#attributes). */
  attributes: Record<string, string>;
  allowIdpInitiated: boolean;
  wantSignedRequests: boolean;
  /** `access.orgs`: only members of these orgs (in these roles) get an assertion; null admits any account. */
  accessOrgs: OrgRule[] | null;
  /** The org that owns it, or null for the operator's. */
  orgId: string | null;
  revision: number;
  createdAt: number;
  updatedAt: number;
}

// ---- Rollout: signed trust profiles, migration plans, projects (docs/rollout.md) ----

/** One signed version of a project's trust profile or migration plan; versions are kept as history. */
export interface StoredRolloutDocument {
  kind: 'profile' | 'plan';
  project: string;
  /** 1, 2, …: each new content is the next version; the highest is in force. */
  version: number;
  /** The validated document (what was signed). */
  document: Record<string, unknown>;
  /** The compact JWS the control plane signed. */
  jws: string;
  /** SHA-256 hex of the JWS. */
  hash: string;
  /** SHA-256 hex of the document's RFC 8785 form: the same content is never signed twice. */
  contentHash: string;
  kid: string;
  createdAt: number;
}

/** The outcome of `keyplane rollout verify`, as recorded. */
export interface RolloutVerification {
  passed: boolean;
  at: number;
  profileVersion: number;
  /** The declared gateway config hash when it was verified (null without a gateway). */
  configHash: string | null;
  checks: Array<{ name: string; ok: boolean; detail: string }>;
}

export interface RolloutAttestation {
  jws: string;
  hash: string;
  at: number;
  profileVersion: number;
  configVersion: number;
  configHash: string;
}

export interface StoredProject {
  project: string;
  /** The client registered for the project, once `register` ran. */
  clientId: string | null;
  verification: RolloutVerification | null;
  attestation: RolloutAttestation | null;
  createdAt: number;
  updatedAt: number;
}

export interface SamlStore {
  keys(): Promise<StoredSamlKey[]>;
  /**
   * Inside a transaction: holds, until it ends, the lock that lets one control plane change the
   * key ring at a time (PostgreSQL advisory lock; SQLite's write transaction already is one).
   */
  lockRing(): Promise<void>;
  insertKey(key: StoredSamlKey): Promise<void>;
  setKeyState(kid: string, state: KeyState, at: number): Promise<void>;
  removeKey(kid: string): Promise<void>;
  /** False when the entityID is registered already. */
  insertProvider(provider: StoredSamlProvider): Promise<boolean>;
  provider(id: string): Promise<StoredSamlProvider | null>;
  providerByEntityId(entityId: string): Promise<StoredSamlProvider | null>;
  /** Every provider (orgId undefined), or those of the listed orgs; oldest first. */
  listProviders(orgIds?: string[]): Promise<StoredSamlProvider[]>;
  /** Conditional on `revision`: null when the stored revision differs (or the entityID is taken). */
  updateProvider(provider: StoredSamlProvider, revision: number): Promise<StoredSamlProvider | null | 'taken'>;
  removeProvider(id: string): Promise<boolean>;
}

export interface RolloutStore {
  /** False when this kind, project and version exist already (two signers raced). */
  insertDocument(document: StoredRolloutDocument): Promise<boolean>;
  latestDocument(kind: StoredRolloutDocument['kind'], project: string): Promise<StoredRolloutDocument | null>;
  /** Every version, newest first. */
  documentHistory(kind: StoredRolloutDocument['kind'], project: string): Promise<StoredRolloutDocument[]>;
  /** Creates the project record when it is missing; returns it either way. */
  ensureProject(project: string, at: number): Promise<StoredProject>;
  getProject(project: string): Promise<StoredProject | null>;
  projectOfClient(clientId: string): Promise<StoredProject | null>;
  listProjects(): Promise<StoredProject[]>;
  /** Binds the client when the project has none or the same one; false otherwise (and for a client bound elsewhere). */
  bindClient(project: string, clientId: string, at: number): Promise<boolean>;
  recordVerification(project: string, verification: RolloutVerification, at: number): Promise<void>;
  recordAttestation(project: string, attestation: RolloutAttestation | null, at: number): Promise<void>;
}

/** A message sent through the contact channel (docs/contact.md). */
export interface StoredContact {
  /** `ctc_` and 128 random bits, base64url. */
  contactId: string;
  email: string;
  topic: string;
  message: string;
  createdAt: number;
  /** When the operator's copy went out; null until then (or with no operator address set). */
  mailedAt: number | null;
}

export interface ContactStore {
  insert(record: StoredContact): Promise<void>;
  get(contactId: string): Promise<StoredContact | null>;
  /** Records that the operator's copy went out; true for the first call only. */
  markMailed(contactId: string, at: number): Promise<boolean>;
  /** Deletes messages received before `before`; returns how many. */
  purgeBefore(before: number): Promise<number>;
}

export interface Stores {
  keys: KeyStore;
  identities: IdentityStore;
  credentials: CredentialStore;
  sessions: SessionStore;
  devices: DeviceStore;
  totp: TotpStore;
  recoveryCodes: RecoveryCodeStore;
  emails: EmailStore;
  links: LinkStore;
  receipts: ReceiptStore;
  clients: ClientStore;
  oidc: OidcStore;
  gateway: GatewayStore;
  agents: AgentStore;
  orgs: OrgStore;
  scans: ScanStore;
  saml: SamlStore;
  rollout: RolloutStore;
  contacts: ContactStore;
  logouts: LogoutStore;
}

/** What a spend with writes did: `written` is what `write` returned, present only when this call spent the row. */
export interface SpentWith<Consumption, T> {
  consumption: Consumption;
  written?: T;
}

/**
 * The writes that go with a spend. They may only call store methods that write and return
 * nothing (inserts, `sessions.touch`, receipt appends): PostgreSQL collects their statements
 * before it knows whether the spend happens, and sends them with it. For the same reason,
 * whatever else they do (the ledger counting its receipt) happens there even when the spend
 * does not: check what can be checked before (a row read as spent already).
 */
export type WritesWithSpend<T> = (tx: Stores) => Promise<T>;

/**
 * What is stored about the account and the sign-in behind a code or grant, read with it: what
 * the grant checks before it issues, and what the ID token states.
 */
export interface GrantSubject {
  /** The account's state; null when it is gone. */
  state: AccountState | null;
  /** Whether the session that started it is live at the time asked. */
  sessionLive: boolean;
  identity: Identity | null;
  /** In `emails.listByIdentity` order. */
  emails: StoredEmail[];
}

export interface Storage extends Stores {
  /** Runs `work` in one transaction: everything it writes lands together or not at all. */
  transaction<T>(work: (tx: Stores) => Promise<T>): Promise<T>;
  /**
   * Spends the code (as `oidc.consumeCode` with `grantId`) and, only if this call spent it, lands
   * what `write` writes in the same atomic step. On PostgreSQL the spend and the writes are one
   * statement (one round trip, no BEGIN or COMMIT); on SQLite, one transaction.
   */
  redeemCode<T>(
    codeHash: string,
    at: number,
    grantId: string,
    write: WritesWithSpend<T>,
  ): Promise<SpentWith<CodeConsumption, T>>;
  /** The same for a refresh token (as `oidc.consumeRefreshToken`) and the writes of its rotation. */
  rotateRefreshToken<T>(
    tokenHash: string,
    at: number,
    write: WritesWithSpend<T>,
  ): Promise<SpentWith<RefreshConsumption, T>>;
  /** The code (as `oidc.findCode`) with its subject, in one read (one statement on PostgreSQL). */
  findCodeWithSubject(
    codeHash: string,
    now: number,
  ): Promise<{ code: StoredAuthorizationCode; subject: GrantSubject } | null>;
  /** The refresh token with its grant (as `oidc.findRefreshGrant`) and the grant's subject, in one read. */
  findRefreshWithSubject(
    tokenHash: string,
    now: number,
  ): Promise<{ token: StoredRefreshToken; grant: StoredGrant; subject: GrantSubject } | null>;
  /** Cheap liveness check for /readyz. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
