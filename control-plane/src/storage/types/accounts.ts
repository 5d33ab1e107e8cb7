import type { JWK } from 'jose';
import type { LinkRecord } from '#lib/magic/magic-link.js';

// Keys, accounts, sessions, second factors, addresses and one-time links.

/** A store of records kept by id: put one in, read one back (null when there is none). */
export interface RecordStore<T> {
  insert(record: T): Promise<void>;
  get(id: string): Promise<T | null>;
}

/**
 * Inside a transaction: holds, until it ends, the lock that lets one control plane change a key
 * ring at a time (PostgreSQL advisory lock; SQLite's write transaction already is one).
 */
export interface RingLock {
  lockRing(): Promise<void>;
}

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

export interface KeyStore extends RingLock {
  list(): Promise<StoredSigningKey[]>;
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
  /**
   * The org that manages the account (created by its JIT or SCIM; docs/orgs.md#managed-accounts);
   * absent for a personal account, which no org ever manages.
   */
  managedBy?: string;
  createdAt: number;
  updatedAt: number;
  /** When the person last declined the passkey offered after a sign-in without one; null if never. */
  passkeyUpgradeDeclinedAt?: number | null;
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
  /** Records that the person declined the offered passkey (docs/passkeys.md#upgrades). */
  declinePasskeyUpgrade(identityId: string, at: number): Promise<void>;
  count(): Promise<number>;
  founderExists(): Promise<boolean>;
  /** The accounts an org manages, oldest first. */
  listManaged(orgId: string): Promise<Identity[]>;
  /** Which of `identityIds` the org manages: look-ups by id, never the org's whole list (a SCIM Group write). */
  managedAmong(orgId: string, identityIds: readonly string[]): Promise<string[]>;
  /** The account's state; null when there is no such identity (never was, or deleted). */
  state(identityId: string): Promise<AccountState | null>;
  /**
   * Username and state of many accounts in one read (the gateway's access directory, built at every
   * poll: two reads per member were seconds per poll for 10,000 members). Unknown ids are left out.
   */
  summaries(
    identityIds: readonly string[],
  ): Promise<Array<{ identityId: string; username: string; state: AccountState }>>;
  /**
   * Accounts by username after `after`, those starting with `prefix` ('' for all), at most `limit`:
   * the console's list, paged by the last username seen.
   */
  listPage(query: { after: string | null; prefix: string; limit: number }): Promise<AccountListing[]>;
  /** Sets the operator's state; false when the identity is unknown or already in that state. */
  setState(identityId: string, state: OperatorState, at: number): Promise<boolean>;
  /**
   * Suspends (`at`) or lifts the suspension (null) of a managed account: the org's flag, apart from
   * the operator's state. False when the identity is unknown or already so.
   */
  setSuspended(identityId: string, at: number | null): Promise<boolean>;
  /**
   * Deletes the identity with everything that hangs on it by foreign key: names and aliases (the
   * username is free again), passkeys, sessions, devices, TOTP, recovery codes, emails, links.
   */
  remove(identityId: string): Promise<boolean>;
}

/**
 * `active`; `disabled` by an operator; `suspended` by the org that manages it (SCIM `active: false`,
 * docs/scim.md#suspension). Only an active account signs in, and only its grants work.
 */
export type AccountState = 'active' | 'disabled' | 'suspended';

/** The states the operator sets; a suspension is a flag of its own, so lifting one never lifts the other. */
export type OperatorState = 'active' | 'disabled';

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
  /** The authenticator's AAGUID (lowercase UUID) from the attested credential data; null when unknown (older passkeys). */
  aaguid?: string | null;
  /** True when its attestation statement was verified against the FIDO metadata at registration (docs/passkeys.md#metadata). */
  attested?: boolean;
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
  /** Brings a live session's absolute (and idle) expiry forward to `notAfter` when it ends later; never lengthens it. */
  capExpiry(sessionId: string, notAfter: number): Promise<void>;
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

export interface EmailStore extends Pick<RecordStore<StoredEmail>, 'get'> {
  /** Adds the address to the identity, or returns the row it already has. */
  add(record: StoredEmail): Promise<StoredEmail>;
  listByIdentity(identityId: string): Promise<StoredEmail[]>;
  /** The one identity's row where this (lower-cased) address is verified. */
  findVerified(email: string): Promise<StoredEmail | null>;
  /** `taken` when another account verified the address first: a verified address belongs to one account. */
  markVerified(emailId: string, at: number): Promise<'verified' | 'already' | 'taken'>;
  /** Removes one address of the identity (an org's SCIM update dropped it); false when it has none such. */
  remove(identityId: string, emailId: string): Promise<boolean>;
}

/** A magic sign-in or email-verification link, stored by the SHA-256 of its token (see lib/magic). */
export type StoredLink = LinkRecord;

export interface LinkStore {
  insert(record: StoredLink): Promise<void>;
  find(tokenHash: string): Promise<StoredLink | null>;
  /** Marks the link used if it is unused and unexpired at `at`: true for exactly one caller. */
  consume(tokenHash: string, at: number): Promise<boolean>;
  /** Deletes links that expired before `before`; returns how many (passkey enrolment links too). */
  purgeExpired(before: number): Promise<number>;
  /** A passkey enrolment link of a provisioned account (purpose `enrol_passkey`; kept apart, docs/scim.md). */
  insertEnrolment(record: StoredLink): Promise<void>;
  findEnrolment(tokenHash: string): Promise<StoredLink | null>;
  /** As `consume`, for an enrolment link: true for exactly one caller. */
  consumeEnrolment(tokenHash: string, at: number): Promise<boolean>;
  /** Deletes the account's unused enrolment links (a new one replaces them); returns how many. */
  revokeEnrolments(identityId: string): Promise<number>;
  /** Whether the account holds an enrolment link still unused and unexpired at `at`. */
  hasLiveEnrolment(identityId: string, at: number): Promise<boolean>;
}

/** A receipt as stored: its canonical JSON, address, tree key and (once sealed) its place. */

/** One account in the console's list: by username, a page at a time. */
export interface AccountListing {
  identityId: string;
  username: string;
  state: AccountState;
  createdAt: number;
}
