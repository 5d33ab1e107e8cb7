// Shared Signals streams (docs/events.md#shared-signals-streams-from-a-receivers-view): each
// receiver client's streams, the subjects it added, and the outbox of security event tokens.

export type SsfStreamStatus = 'enabled' | 'paused' | 'disabled';

export interface StoredSsfStream {
  streamId: string;
  /** The receiver: the client whose client-credentials token manages the stream, the SETs' `aud`. */
  clientId: string;
  /** `push` (RFC 8935) or `poll` (RFC 8936). */
  delivery: 'push' | 'poll';
  /** The receiver's push endpoint; null for a poll stream. */
  endpointUrl: string | null;
  /** The `Authorization` value to push with, sealed under the master key; null when none. */
  authorizationSealed: Buffer | null;
  eventsRequested: string[];
  description: string | null;
  status: SsfStreamStatus;
  statusReason: string | null;
  createdAt: number;
  updatedAt: number;
}

export type SsfEventState = 'pending' | 'delivered' | 'dead';

/** A stream's subjects and its outbox rows by state (delivered and dead rows are pruned after a while). */
export interface SsfStreamCounts {
  subjects: number;
  pending: number;
  delivered: number;
  dead: number;
}

/** One SET for one stream: the outbox row, written in the transaction that wrote its receipt. */
export interface SsfEvent {
  /** The SET's `jti`. */
  eventId: string;
  streamId: string;
  delivery: 'push' | 'poll';
  /**
   * The SET's claims as JSON, the same on every attempt and poll, signed with the current key
   * each time it leaves (ssf/outbox.ts `signedSet`); a row queued before that holds the signed SET.
   */
  set: string;
  createdAt: number;
  attempts: number;
  nextAttemptAt: number;
  state: SsfEventState;
  lastError: string | null;
  finishedAt: number | null;
}

/** A stream an account is a subject of, and what its receiver may be told about the account. */
export interface SsfSubjectStream {
  stream: StoredSsfStream;
  /** The receiver holds scope `email` for the account (a grant or an approval naming it). */
  email: boolean;
}

export interface SsfStore {
  insertStream(stream: StoredSsfStream): Promise<void>;
  getStream(streamId: string): Promise<StoredSsfStream | null>;
  listStreams(clientId: string): Promise<StoredSsfStream[]>;
  /** Every receiver's streams by stream id, those after `after` (the operator console's list). */
  listPage(query: { after: string | null; limit: number }): Promise<StoredSsfStream[]>;
  /** How many subjects each of the streams holds, and its events by state (absent ids: none). */
  counts(streamIds: readonly string[]): Promise<Map<string, SsfStreamCounts>>;
  /** Every enabled stream (what the ledger follower matches receipts against). */
  listEnabled(): Promise<StoredSsfStream[]>;
  updateStream(stream: StoredSsfStream): Promise<void>;
  /** Deletes the stream with its subjects and events; false when there was none. */
  removeStream(streamId: string): Promise<boolean>;
  /**
   * Whether the account may be a subject of the client's streams right now: a live grant to the
   * client, an approval of it, or the account is managed by the org that owns the client.
   */
  mayBeSubject(identityId: string, clientId: string, at: number): Promise<boolean>;
  addSubject(streamId: string, identityId: string, at: number): Promise<void>;
  removeSubject(streamId: string, identityId: string): Promise<void>;
  /** Forgets the account as a subject of every stream (it was deleted). */
  forgetSubject(identityId: string): Promise<void>;
  /**
   * The enabled streams the account was added to whose client still knows it at `at`: a live
   * grant to it, or one the event itself revoked (its revocation is what the receiver must hear
   * of), an approval, or the org that owns the client manages the account.
   */
  subjectStreams(identityId: string, at: number): Promise<SsfSubjectStream[]>;

  enqueue(event: SsfEvent): Promise<void>;
  /** Leases up to `limit` due pending push events to `holder` (SKIP LOCKED on PostgreSQL). */
  claimDue(now: number, holder: string, leaseUntil: number, limit: number): Promise<SsfEvent[]>;
  /** Records an attempt's outcome and ends the lease; false when `holder` no longer holds it. */
  finish(
    eventId: string,
    holder: string,
    update: Pick<SsfEvent, 'state' | 'attempts' | 'nextAttemptAt' | 'lastError' | 'finishedAt'>,
  ): Promise<boolean>;
  /** Up to `limit` pending events of a poll stream, oldest first, and whether more wait. */
  pollable(streamId: string, limit: number): Promise<{ events: SsfEvent[]; more: boolean }>;
  /** Acknowledges poll events of the stream (RFC 8936 §2.4); unknown ids are ignored. */
  acknowledge(streamId: string, eventIds: readonly string[], at: number): Promise<void>;
  /** Pending push events and the creation time of the oldest (metrics). */
  backlog(): Promise<{ pending: number; oldestCreatedAt: number | null }>;
  /** Deletes finished events older than `before`, and poll events never acknowledged before `staleBefore`. */
  purge(before: number, staleBefore: number): Promise<number>;
}
