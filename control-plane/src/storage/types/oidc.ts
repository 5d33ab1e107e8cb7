import type { Approval } from '#lib/oauth/authorization-request.js';
import type { ClientMetadata, ClientType } from '#lib/oauth/client-metadata.js';
import type { RecordStore } from './accounts.js';

// Receipts, OIDC clients and the OIDC provider's codes, grants and refresh tokens.

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
  /** Position of its tree key in the transparency log; null until its epoch is appended there. */
  tlogIndex: number | null;
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
export interface ReceiptQuery {
  after: number;
  limit: number;
  kind?: string;
  subject?: string;
  since?: number;
  until?: number;
}

export interface ReceiptStore {
  /**
   * Appends a receipt; call inside the transaction of the change it records. `body` is the
   * receipt's canonical JSON when the caller has it already (the hash was taken of it), so
   * the hot path serializes a receipt once.
   */
  append(receipt: { kind: string }, hash: string, createdAt: number, body?: string): Promise<void>;
  get(hash: string): Promise<StoredReceipt | undefined>;
  /**
   * The audit export (docs/events.md#audit-export): up to `limit` receipts after position `after`,
   * in the order they became visible (never one before a position already given, on PostgreSQL
   * either, where a receipt may commit after a later one: `Dialect.receiptsAfter`), filtered by
   * kind, by an opaque id the receipt names (`subject`: one of the ids `append` indexed,
   * lib/ledger/receipt-subjects.ts) and by when they were written.
   */
  list(query: ReceiptQuery): Promise<Array<{ position: number; hash: string; body: string; createdAt: number }>>;
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
  /**
   * Appends receipts already placed in sealed epoch `epoch` (a bulk import: `Ledger.importSealed`,
   * which inserts the epoch's checkpoint in the same transaction): one write per receipt instead of
   * an append and then a placement.
   */
  appendSealed(
    epoch: number,
    receipts: Array<{ hash: string; body: string; kind: string; createdAt: number; index: number; path: Buffer[] }>,
  ): Promise<void>;
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

export interface ClientStore extends RecordStore<StoredClient> {
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
  /** An exchanged token's grant: the grant its subject token came from, which it never outlives. */
  sourceGrantId?: string;
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
  /**
   * Moves an unused refresh token's idle end (a token that does not rotate, used again); false
   * when it is unknown or was used up meanwhile.
   */
  extendRefreshToken(tokenHash: string, idleExpiresAt: number): Promise<boolean>;
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
  /** The account's grants neither revoked nor expired at `at`. */
  liveGrantsOf(identityId: string, at: number): Promise<StoredGrant[]>;
  /** Deletes the account's codes, grants (with their refresh tokens) and approvals. */
  forgetIdentity(identityId: string): Promise<void>;
  /** Deletes expired codes, refresh tokens and revoked-token markers; returns how many rows went. */
  purgeExpired(before: number): Promise<number>;
}
