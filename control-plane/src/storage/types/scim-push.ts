// Outbound SCIM (docs/scim.md#outbound-scim): the SCIM servers clients gave, the outbox of pushes
// to them, and what each server calls the users and groups pushed there.

/** A client's SCIM server; the bearer token is sealed under the master key. */
export interface StoredScimPushTarget {
  clientId: string;
  baseUrl: string;
  tokenSealed: Buffer;
  createdAt: number;
  updatedAt: number;
  /** When a push to it last succeeded; null before the first. */
  lastSyncAt: number | null;
}

/** What a job pushes: one account, one team, or the client's periodic reconciliation. */
export type ScimPushResource = 'user' | 'group' | 'reconcile';

export type ScimPushJobState = 'pending' | 'delivered' | 'dead';

/** One outbox row: the latest state of (client, resource, local id) is what its delivery pushes. */
export interface ScimPushJob {
  clientId: string;
  resource: ScimPushResource;
  /** The identity id, the team id, or the client id for `reconcile`. */
  localId: string;
  /** Grows at every queueing: a change while a delivery is under way is not lost. */
  version: number;
  createdAt: number;
  attempts: number;
  nextAttemptAt: number;
  state: ScimPushJobState;
  lastStatus: number | null;
  lastError: string | null;
  finishedAt: number | null;
}

/** What the remote server calls a pushed user or group, and whether the user was left active. */
export interface ScimPushLink {
  clientId: string;
  resource: 'user' | 'group';
  localId: string;
  remoteId: string;
  active: boolean;
  updatedAt: number;
}

export interface ScimPushStore {
  /** Adds or replaces the client's target. */
  putTarget(target: StoredScimPushTarget): Promise<void>;
  target(clientId: string): Promise<StoredScimPushTarget | null>;
  targets(): Promise<StoredScimPushTarget[]>;
  /** Removes the target with its jobs and links; false when there was none. */
  removeTarget(clientId: string): Promise<boolean>;
  markSynced(clientId: string, at: number): Promise<void>;
  /**
   * Queues (client, resource, local id) due at `at`: a new row, or the existing one pending again
   * with its version grown (a failing one keeps its attempts, so its failures stay reported).
   * Writes only: it runs in a receipt's transaction.
   */
  enqueue(clientId: string, resource: ScimPushResource, localId: string, at: number): Promise<void>;
  /** Leases up to `limit` due pending rows to `holder`, atomically. */
  claimDue(now: number, holder: string, leaseUntil: number, limit: number): Promise<ScimPushJob[]>;
  /**
   * Writes an outcome if `holder` holds the row and it was not queued again meanwhile (`version`);
   * when it was, only the lease is given back and the row stays due. Says which happened.
   */
  finish(
    job: Pick<ScimPushJob, 'clientId' | 'resource' | 'localId' | 'version'>,
    holder: string,
    update: Pick<ScimPushJob, 'state' | 'attempts' | 'nextAttemptAt' | 'lastStatus' | 'lastError' | 'finishedAt'>,
  ): Promise<'finished' | 'requeued' | 'lost'>;
  /** The client's rows waiting or given up on, the oldest first (its sync state). */
  unfinished(clientId: string): Promise<ScimPushJob[]>;
  backlog(): Promise<{ pending: number; oldestCreatedAt: number | null }>;
  /** Deletes delivered rows finished before `before`, and every row of a client without a target. */
  purge(before: number): Promise<number>;
  link(clientId: string, resource: 'user' | 'group', localId: string): Promise<ScimPushLink | null>;
  links(clientId: string, resource: 'user' | 'group'): Promise<ScimPushLink[]>;
  putLink(link: ScimPushLink): Promise<void>;
  removeLink(clientId: string, resource: 'user' | 'group', localId: string): Promise<void>;
}
