import { isFetchRefusal } from '#lib/fetch/guarded-fetch.js';
import { buildLogoutTokenClaims, signLogoutToken } from '#lib/tokens/logout-token.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import type { BackchannelDelivery, ControlPlaneServices } from '../context.js';
import type { BackchannelLogout, LogoutAttempt, Stores } from '../storage/types.js';

/**
 * OpenID Connect Back-Channel Logout 1.0: when a session ends, every client that got tokens in it
 * and registered a `backchannel_logout_uri` is sent a signed logout token. The tokens wait in an
 * outbox written in the transaction that ended the session (so a crash loses none), and a
 * worker delivers them through the guarded fetcher, retrying with growing waits. Replicas share
 * the work by leasing rows (docs/oidc.md#101-back-channel-logout).
 */

/** A logout token is valid this long after it is signed (§2.4: short-lived). */
const LOGOUT_TOKEN_LIFETIME_SECONDS = 120;
/** A claimed row is this replica's for this long; one that crashed meanwhile leaves it to the others after. */
const LEASE_MS = 60_000;
/** Rows claimed per round, and sent at most this many at a time (well inside the lease even when each times out). */
const BATCH = 20;
const CONCURRENCY = 5;
/** Waits before the next attempt grow by this factor from the first, up to the last. */
const BACKOFF = { firstMs: 5000, factor: 3, maxMs: 3_600_000 };
/** Finished rows are kept this long (ms), then purged; participants as long as a session can live. */
const KEEP_FINISHED_MS = 30 * 86_400_000;
const PURGE_EVERY_MS = 3_600_000;
const DELIVERY = { timeoutMs: 5000, maxBytes: 65_536 };

/**
 * Queues a logout token for every client that got tokens in one of the ended sessions and
 * registered a `backchannel_logout_uri`, inside the caller's transaction, each receipted as
 * `logout.backchannel_queued`. A session ends once, so a (session, client) pair is queued once.
 */
export async function queueBackchannelLogouts(
  services: Pick<ControlPlaneServices, 'events'>,
  tx: Stores,
  sessionIds: readonly string[],
  at: number,
): Promise<number> {
  if (sessionIds.length === 0) return 0;
  let queued = 0;
  for (const participant of await tx.logouts.participants(sessionIds)) {
    const client = await tx.clients.get(participant.clientId);
    if (client?.metadata.backchannel_logout_uri === undefined) continue;
    const logout: BackchannelLogout = {
      logoutId: randomId('bcl'),
      clientId: participant.clientId,
      identityId: participant.identityId,
      sessionId: participant.sessionId,
      jti: randomToken(16),
      createdAt: at,
      attempts: 0,
      nextAttemptAt: at,
      state: 'pending',
      lastError: null,
      finishedAt: null,
    };
    if (!(await tx.logouts.enqueue(logout))) continue;
    queued += 1;
    await services.events.record(tx, {
      type: 'logout.backchannel_queued',
      at,
      outcome: 'success',
      logoutId: logout.logoutId,
      clientId: logout.clientId,
      identityId: logout.identityId,
      sessionId: logout.sessionId,
    });
  }
  return queued;
}

/** The wait before attempt `attempts + 1`, after `attempts` failed ones. */
export function backoffMs(attempts: number): number {
  return Math.min(BACKOFF.maxMs, BACKOFF.firstMs * BACKOFF.factor ** Math.max(0, attempts - 1));
}

/** How one attempt ended: delivered, worth another try, or never going to work. */
type Outcome = { kind: 'delivered'; status: number } | { kind: 'retry' | 'abandon'; error: string };

/**
 * §2.8: the RP answers 200 (or 204) when it logged out. A 5xx, 408 or 429 may pass; any other
 * answer, a redirect included, says this token will never be taken. Network failures are
 * retried; a target the fetcher refuses (not https, an internal address) is not.
 */
function judge(status: number): Outcome {
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  if (status >= 500 || status === 408 || status === 429) return { kind: 'retry', error: `status_${status}` };
  return { kind: 'abandon', error: `status_${status}` };
}

export type BackchannelServices = Pick<
  ControlPlaneServices,
  'storage' | 'events' | 'keys' | 'config' | 'fetcher' | 'now'
>;

export interface BackchannelWorkerOptions {
  pollIntervalMs: number;
  maxAttempts: number;
  onError?: (error: unknown) => void;
}

/** Delivers queued logout tokens: on a timer, and at once when this replica queues one (`nudge`). */
export class BackchannelLogoutWorker implements BackchannelDelivery {
  private readonly holder = randomId('bcw');
  private timer: NodeJS.Timeout | null = null;
  private purger: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private again = false;
  private closed = false;

  constructor(
    private readonly services: BackchannelServices,
    private readonly options: BackchannelWorkerOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.nudge(), this.options.pollIntervalMs);
    this.timer.unref();
    this.purger = setInterval(() => void this.purge().catch(this.options.onError), PURGE_EVERY_MS);
    this.purger.unref();
    this.nudge();
  }

  /** Runs a delivery round soon; a round in progress runs once more when it ends. */
  nudge(): void {
    if (this.closed) return;
    setImmediate(() => void this.deliverDue().catch((error: unknown) => this.options.onError?.(error)));
  }

  /** Delivers every logout due now; returns how many attempts were made. Tests call it directly. */
  async deliverDue(): Promise<number> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const run = (async () => {
      let attempted = 0;
      do {
        this.again = false;
        for (;;) {
          if (this.closed) return attempted;
          const now = this.services.now();
          const due = await this.services.storage.logouts.claimDue(now, this.holder, now + LEASE_MS, BATCH);
          for (let i = 0; i < due.length; i += CONCURRENCY)
            await Promise.all(due.slice(i, i + CONCURRENCY).map((logout) => this.deliver(logout)));
          attempted += due.length;
          if (due.length < BATCH) break;
        }
      } while (this.again);
      return attempted;
    })();
    this.running = run;
    try {
      return await run;
    } finally {
      this.running = null;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.purger) clearInterval(this.purger);
    await this.running?.catch(() => undefined);
  }

  async purge(): Promise<number> {
    const now = this.services.now();
    const sessionLifetimeMs = this.services.config.lifetimes.sessionAbsolute * 1000;
    return this.services.storage.logouts.purge(now - KEEP_FINISHED_MS, now - sessionLifetimeMs - 86_400_000);
  }

  private async attempt(logout: BackchannelLogout): Promise<Outcome> {
    const { storage, config, keys, fetcher } = this.services;
    const client = await storage.clients.get(logout.clientId);
    if (!client) return { kind: 'abandon', error: 'client_deleted' };
    const uri = client.metadata.backchannel_logout_uri;
    if (uri === undefined) return { kind: 'abandon', error: 'no_backchannel_logout_uri' };
    const token = await signLogoutToken(
      buildLogoutTokenClaims({
        issuer: config.issuer,
        clientId: logout.clientId,
        subject: logout.identityId,
        sessionId: logout.sessionId,
        jti: logout.jti,
        now: this.services.now(),
        lifetimeSeconds: LOGOUT_TOKEN_LIFETIME_SECONDS,
      }),
      keys.current(),
    );
    try {
      const answer = await fetcher.fetch(uri, {
        ...DELIVERY,
        method: 'POST',
        // §2.5: the logout token as the form parameter logout_token.
        body: new URLSearchParams({ logout_token: token }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        accept: '*/*',
        followRedirects: false,
      });
      return judge(answer.status);
    } catch (error) {
      if (!isFetchRefusal(error)) throw error;
      const transient = ['fetch_failed', 'fetch_timeout', 'fetch_unresolvable', 'fetch_too_large'];
      return { kind: transient.includes(error.reason) ? 'retry' : 'abandon', error: error.reason };
    }
  }

  private async deliver(logout: BackchannelLogout): Promise<void> {
    let outcome: Outcome;
    try {
      outcome = await this.attempt(logout);
    } catch (error) {
      this.options.onError?.(error);
      outcome = { kind: 'retry', error: 'internal' };
    }
    const now = this.services.now();
    const attempts = logout.attempts + 1;
    const exhausted = outcome.kind === 'retry' && attempts >= this.options.maxAttempts;
    const state =
      outcome.kind === 'delivered' ? 'delivered' : outcome.kind === 'abandon' || exhausted ? 'abandoned' : 'pending';
    const next: LogoutAttempt = {
      state,
      attempts,
      nextAttemptAt: state === 'pending' ? now + backoffMs(attempts) : logout.nextAttemptAt,
      lastError: outcome.kind === 'delivered' ? null : outcome.error,
      finishedAt: state === 'pending' ? null : now,
    };
    const common = {
      at: now,
      logoutId: logout.logoutId,
      clientId: logout.clientId,
      identityId: logout.identityId,
      sessionId: logout.sessionId,
      attempts,
    };
    await this.services.storage.transaction(async (tx) => {
      // Our lease ran out and another replica took the row: its outcome counts, not ours.
      if (!(await tx.logouts.finish(logout.logoutId, this.holder, next))) return;
      if (outcome.kind === 'delivered')
        await this.services.events.record(tx, {
          type: 'logout.backchannel_delivered',
          outcome: 'success',
          status: outcome.status,
          ...common,
        });
      else if (state === 'abandoned')
        await this.services.events.record(tx, {
          type: 'logout.backchannel_abandoned',
          outcome: 'failure',
          error: outcome.error,
          ...common,
        });
    });
  }
}
