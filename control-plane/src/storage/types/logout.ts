// OpenID Connect Back-Channel Logout 1.0: who to tell when a session ends (docs/oidc.md#101-back-channel-logout).

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
  /** Pending logouts, and when the oldest was queued (the outbox metrics). */
  backlog(): Promise<{ pending: number; oldestCreatedAt: number | null }>;
  /** The logouts queued for a session, oldest first. */
  listForSession(sessionId: string): Promise<BackchannelLogout[]>;
  /**
   * Deletes delivered or abandoned logouts finished before `finishedBefore`, and participants
   * recorded before `participantsBefore` (their sessions have ended by then). Returns how many rows went.
   */
  purge(finishedBefore: number, participantsBefore: number): Promise<number>;
}
