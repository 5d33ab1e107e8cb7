import { isAssuranceLevel, rankAssurance } from '#lib/assurance/assurance.js';
import { unavailableFailure } from '#lib/errors/dependency-outage.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { clearSessionCookies, writeSessionCookies, type GateSession } from '#lib/gateway-protocol/session-cookie.js';
import { forgetSingleFlight, runSingleFlight } from '#lib/gateway-protocol/single-flight.js';
import type { GatewayContext } from './context.js';
import { verifyIdToken } from './id-token.js';
import { latestSessionKey, openSealedCookies, refreshDue } from './sessions.js';
import { isTokenEndpointError } from './token-client.js';

/**
 * Single-flight settings of a refresh: the lock outlives the token request's own timeout; waiters
 * give up (503, retry) after 10 s; the result stays readable for 60 s, so a request still carrying
 * the old cookie gets the new one instead of spending the rotated refresh token again, which
 * the control plane would answer by revoking the whole family (RFC 9700 §4.14.2).
 */
const REFRESH_FLIGHT = { lockMs: 15_000, waitMs: 10_000, resultMs: 60_000 } as const;
/** Stored for the waiters when the control plane did not answer: they retry rather than sign out. */
const REFRESH_RETRY = '{"retry":true}';

/** What a due refresh produced: the refreshed session, or none (signed out), with the Set-Cookie values to answer with. */
export interface RefreshOutcome {
  session: GateSession | null;
  cookies: string[];
}

/**
 * The session to go on with when the presented one is due. A refresh may have happened already
 * at any replica without this browser receiving the cookie (behind forward auth the proxy may
 * not relay Set-Cookie): the newest state of each session is kept, sealed, in shared state, so
 * an old cookie moves on to it instead of spending a refresh token that was rotated already
 * (which the control plane would answer by revoking the whole family).
 */
export async function renewedSession(
  ctx: GatewayContext,
  presented: GateSession,
  present: string[],
): Promise<RefreshOutcome> {
  const stored = await ctx.state.get(latestSessionKey(presented.sid));
  if (stored) {
    const newest = await openSealedCookies(ctx, stored);
    if (
      newest &&
      newest.session.sid === presented.sid &&
      (newest.session.accessTokenExpiresAt ?? 0) > (presented.accessTokenExpiresAt ?? 0)
    ) {
      if (!refreshDue(ctx, newest.session)) {
        ctx.metrics.refreshes.inc({ outcome: 'joined' });
        return newest;
      }
      return refreshSession(ctx, newest.session, present);
    }
  }
  return refreshSession(ctx, presented, present);
}

/**
 * Refreshes a session whose access token is due, once across every replica: the refresh token
 * rotates at the control plane and a second use revokes the family, so concurrent requests wait
 * for the one refresh and all answer with its cookies. A refused refresh ends the session; a
 * refresh that did not finish in time is a 503 to retry.
 */
async function refreshSession(ctx: GatewayContext, session: GateSession, present: string[]): Promise<RefreshOutcome> {
  const signedOut: RefreshOutcome = { session: null, cookies: clearSessionCookies(present, ctx.secure) };
  const refreshToken = session.refreshToken;
  if (!refreshToken || !ctx.tokens) return signedOut;
  // Per session and per access token: the next refresh of the same session never reads this one's result.
  const key = `refresh:${session.sid}:${session.accessTokenExpiresAt}`;
  const flight = await runSingleFlight(
    ctx.state,
    key,
    () => renewSession(ctx, session, refreshToken, present),
    REFRESH_FLIGHT,
  );
  if (!flight.ok) {
    if (flight.reason === 'timeout') {
      ctx.metrics.refreshes.inc({ outcome: 'retry' });
      throw fail('session_refresh_pending', 'another request is refreshing this session; retry', {
        headers: { 'retry-after': '1' },
      });
    }
    ctx.metrics.refreshes.inc({ outcome: 'signed_out' });
    return signedOut;
  }
  if (flight.value === REFRESH_RETRY) {
    ctx.metrics.refreshes.inc({ outcome: 'retry' });
    if (flight.leader) await forgetSingleFlight(ctx.state, key);
    throw unavailableFailure({ dependency: 'control_plane' });
  }
  const renewed = await openSealedCookies(ctx, flight.value);
  ctx.metrics.refreshes.inc({ outcome: renewed ? (flight.leader ? 'refreshed' : 'joined') : 'signed_out' });
  return renewed ?? signedOut;
}

/** The refresh itself (run by one request): the sealed cookies of the renewed session, never a raw token, go to shared state. */
async function renewSession(
  ctx: GatewayContext,
  session: GateSession,
  refreshToken: string,
  present: string[],
): Promise<string> {
  let set;
  try {
    set = await ctx.tokens!.refresh(refreshToken);
  } catch (error) {
    if (isTokenEndpointError(error) && error.kind === 'unavailable') return REFRESH_RETRY;
    ctx.log.info(
      {
        event: 'gateway.session_ended',
        cause: 'refresh_refused',
        error: isTokenEndpointError(error) ? error.error : undefined,
      },
      'the control plane refused the refresh: session over',
    );
    throw error;
  }
  const at = ctx.now();
  const facts = set.idToken
    ? await verifyIdToken(set.idToken, {
        issuer: ctx.controlPlane,
        clientId: ctx.config.clientId ?? '',
        keys: ctx.keys,
        now: at,
        nonce: null,
        subject: session.sub,
      })
    : null;
  // The session keeps its absolute lifetime from sign-in; a refresh never extends it.
  const remaining = (session.exp ?? 0) - Math.floor(at / 1000);
  if (remaining <= 0) throw new Error('the session is over');
  // A refreshed token may state less than the sign-in (a step-up window closed), never more.
  const assurance =
    facts && (!isAssuranceLevel(session.assurance) || rankAssurance(facts.assurance) < rankAssurance(session.assurance))
      ? facts.assurance
      : session.assurance;
  const { refreshToken: _spent, exp: _exp, ...rest } = session;
  const next: GateSession = {
    ...rest,
    assurance,
    ...(facts?.email !== undefined ? { email: facts.email, emailVerified: facts.emailVerified === true } : {}),
    ...(facts?.username !== undefined ? { username: facts.username } : {}),
    ...(facts?.orgs !== undefined ? { orgs: facts.orgs } : {}),
    ...(facts?.groups !== undefined ? { groups: facts.groups } : {}),
    ...(facts?.idp !== undefined ? { idp: facts.idp } : {}),
    scopes: set.scope.length > 0 ? set.scope : session.scopes,
    accessToken: set.accessToken,
    accessTokenExpiresAt: Math.floor(at / 1000) + set.expiresIn,
    ...(set.refreshToken ? { refreshToken: set.refreshToken } : {}),
    ...(set.idToken ? { idToken: set.idToken } : {}),
  };
  const sealed = JSON.stringify(
    await writeSessionCookies(next, {
      keys: ctx.cookieKeys,
      now: at,
      secure: ctx.secure,
      ttlSeconds: remaining,
      present,
    }),
  );
  // Until the session ends: a browser whose proxy never relayed this cookie still finds it.
  await ctx.state.set(latestSessionKey(session.sid), sealed, remaining * 1000);
  return sealed;
}
