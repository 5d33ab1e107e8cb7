import { backoffMs, type BackoffPolicy } from '#lib/outbox/backoff.js';
import { buildLogoutTokenClaims, signLogoutToken } from '#lib/tokens/logout-token.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import { outcomeOfFetchFailure, type DeliveryOutcome, type OutboxAdapter } from '../outbox/delivery-loop.js';
import type { BackchannelLogout, LogoutAttempt, Stores } from '../storage/interface.js';

/**
 * OpenID Connect Back-Channel Logout 1.0: when a session ends, every client that got tokens in it
 * and registered a `backchannel_logout_uri` is sent a signed logout token. The tokens wait in an
 * outbox written in the transaction that ended the session (so a crash loses none), and the
 * delivery loop (outbox/delivery-loop.ts) sends them through the guarded fetcher, retrying with
 * growing waits. Replicas share the work by leasing rows (docs/oidc.md#101-back-channel-logout).
 */

/** A logout token is valid this long after it is signed (§2.4: short-lived). */
const LOGOUT_TOKEN_LIFETIME_SECONDS = 120;
/** Waits before the next attempt grow by this factor from the first, up to the last. */
const BACKOFF: BackoffPolicy = { firstMs: 5000, factor: 3, maxMs: 3_600_000 };
/** Finished rows are kept this long (ms), then purged; participants as long as a session can live. */
const KEEP_FINISHED_MS = 30 * 86_400_000;
const DELIVERY = { timeoutMs: 5000, maxBytes: 65_536 };

/**
 * Queues a logout token for every client that got tokens in one of the ended sessions and
 * registered a `backchannel_logout_uri`, inside the caller's transaction, each receipted as
 * `logout.backchannel_queued`. A session ends once, so a (session, client) pair is queued once.
 * With `only`, just those (session, client) pairs: a client whose access ended while the session
 * goes on (docs/security.md#access-rules-on-every-path).
 */
export async function queueBackchannelLogouts(
  services: Pick<ControlPlaneServices, 'events'>,
  tx: Stores,
  sessionIds: readonly string[],
  at: number,
  only?: ReadonlyArray<{ sessionId: string; clientId: string }>,
): Promise<number> {
  if (sessionIds.length === 0) return 0;
  let queued = 0;
  for (const participant of await tx.logouts.participants(sessionIds)) {
    if (only && !only.some((p) => p.sessionId === participant.sessionId && p.clientId === participant.clientId))
      continue;
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

/**
 * §2.8: the RP answers 200 (or 204) when it logged out. A 5xx, 408 or 429 may pass; any other
 * answer, a redirect included, says this token will never be taken. Network failures are
 * retried; a target the fetcher refuses (not https, an internal address) is not.
 */
function judge(status: number): DeliveryOutcome {
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  if (status >= 500 || status === 408 || status === 429) return { kind: 'retry', error: `status_${status}`, status };
  return { kind: 'abandon', error: `status_${status}`, status };
}

export type BackchannelServices = Pick<
  ControlPlaneServices,
  'storage' | 'events' | 'keys' | 'config' | 'fetcher' | 'now'
>;

/**
 * The back-channel logout subscriber of the delivery loop (outbox/delivery-loop.ts): its rows are
 * the logout tokens queued when sessions ended.
 */
export function backchannelLogoutAdapter(
  services: BackchannelServices,
  maxAttempts: number,
): OutboxAdapter<BackchannelLogout> {
  const { storage } = services;
  return {
    subscriber: 'backchannel_logout',
    claimDue: (now, holder, leaseUntil, limit) => storage.logouts.claimDue(now, holder, leaseUntil, limit),
    attempt: (logout) => attempt(services, logout),
    settle: (logout, outcome, holder) => settle(services, maxAttempts, logout, outcome, holder),
    backlog: () => storage.logouts.backlog(),
    purge: (now) => {
      const sessionLifetimeMs = services.config.lifetimes.sessionAbsolute * 1000;
      return storage.logouts.purge(now - KEEP_FINISHED_MS, now - sessionLifetimeMs - 86_400_000);
    },
  };
}

async function attempt(services: BackchannelServices, logout: BackchannelLogout): Promise<DeliveryOutcome> {
  const { storage, config, keys, fetcher } = services;
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
      now: services.now(),
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
    return outcomeOfFetchFailure(error);
  }
}

async function settle(
  services: BackchannelServices,
  maxAttempts: number,
  logout: BackchannelLogout,
  outcome: DeliveryOutcome,
  holder: string,
): Promise<'delivered' | 'pending' | 'dead' | 'lost'> {
  const now = services.now();
  const attempts = logout.attempts + 1;
  const exhausted = outcome.kind === 'retry' && attempts >= maxAttempts;
  const state =
    outcome.kind === 'delivered' ? 'delivered' : outcome.kind === 'abandon' || exhausted ? 'abandoned' : 'pending';
  const next: LogoutAttempt = {
    state,
    attempts,
    nextAttemptAt: state === 'pending' ? now + backoffMs(attempts, BACKOFF) : logout.nextAttemptAt,
    lastError: outcome.kind === 'delivered' ? null : outcome.error,
    finishedAt: state === 'pending' ? null : now,
  };
  const common = {
    at: now,
    actor: { type: 'system' as const },
    logoutId: logout.logoutId,
    clientId: logout.clientId,
    identityId: logout.identityId,
    sessionId: logout.sessionId,
    attempts,
  };
  const finished = await services.storage.transaction(async (tx) => {
    // Our lease ran out and another replica took the row: its outcome counts, not ours.
    if (!(await tx.logouts.finish(logout.logoutId, holder, next))) return false;
    if (outcome.kind === 'delivered')
      await services.events.record(tx, {
        type: 'logout.backchannel_delivered',
        outcome: 'success',
        status: outcome.status,
        ...common,
      });
    else if (state === 'abandoned')
      await services.events.record(tx, {
        type: 'logout.backchannel_abandoned',
        outcome: 'failure',
        error: outcome.error,
        ...common,
      });
    return true;
  });
  if (!finished) return 'lost';
  return state === 'abandoned' ? 'dead' : state;
}
