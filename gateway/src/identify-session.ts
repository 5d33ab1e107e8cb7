import type { IncomingMessage, ServerResponse } from 'node:http';
import { isAssuranceLevel } from '#lib/assurance/assurance.js';
import { clearSessionCookies } from '#lib/gateway-protocol/session-cookie.js';
import type { GatewayContext, Identified } from './context.js';
import { renewedSession } from './refresh.js';
import { requestScope } from './request-scope.js';
import { latestSessionKey, openSession, refreshDue } from './sessions.js';

/**
 * The browser's session, refreshed first when its access token is due, so freshness, the step-up
 * window (a refreshed ID token may state less) and revocation at the control plane hold alike
 * for requests and upgrades. An upgrade cannot carry Set-Cookie through the splice, but the
 * refreshed state is kept in shared state (`latestSessionKey`), so the browser's next request
 * with its old cookie moves on to it instead of spending the rotated refresh token again.
 */
export async function identifySession(
  ctx: GatewayContext,
  req: IncomingMessage,
  res?: ServerResponse,
): Promise<Identified> {
  const scope = requestScope(req);
  const { cookieHeader } = scope;
  const cookieNames = Object.keys(scope.cookies);
  let session = await openSession(ctx, scope);
  if (!session || !cookieHeader) return { caller: null, session: null, api: false };
  if (session.idpSid !== undefined && ctx.holder.current?.revokedSessions.has(session.idpSid)) {
    // Signed out or revoked at the control plane: the session ends here at once, not at its next refresh.
    ctx.caches.sessions.delete(cookieHeader);
    await ctx.state.del(latestSessionKey(session.sid));
    res?.setHeader('set-cookie', clearSessionCookies(cookieNames, ctx.secure));
    return { caller: null, session: null, api: false };
  }
  if (ctx.endedSessions.has(session.sid)) {
    // A cookie of a session that a sign-in or step-up replaced, or that signed out: a copy (or a
    // straggler) is refused, never moved on (docs/gateway.md#session-rotation). Its cookies are
    // not cleared: a request that was in flight when the new cookie arrived would clear that one.
    ctx.caches.sessions.delete(cookieHeader);
    ctx.log.info({ event: 'gateway.ended_session_presented' }, 'a cookie of an ended session was refused');
    return { caller: null, session: null, api: false };
  }
  if (refreshDue(ctx, session)) {
    ctx.caches.sessions.delete(cookieHeader);
    const outcome = await renewedSession(ctx, session, cookieNames);
    res?.setHeader('set-cookie', outcome.cookies);
    if (!outcome.session) return { caller: null, session: null, api: false };
    session = outcome.session;
  }
  const assurance = isAssuranceLevel(session.assurance) ? session.assurance : 'recovery';
  return {
    caller: {
      kind: 'session',
      subject: session.sub,
      principalType: session.principalType,
      assurance,
      scopes: session.scopes ?? [],
      bucketId: session.sid,
      ...(session.email !== undefined ? { email: session.email, emailVerified: session.emailVerified === true } : {}),
    },
    session,
    api: false,
  };
}
