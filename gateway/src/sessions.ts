import { readSessionCookies, type GateSession } from '#lib/gateway-protocol/session-cookie.js';
import type { GatewayContext } from './context.js';
import type { RequestScope } from './request-scope.js';

const SESSION_CACHE_MS = 60_000;
/** A session's access token is refreshed this many seconds before it expires (clock skew, requests in flight). */
export const REFRESH_SKEW_SECONDS = 30;

/** Where the newest sealed state of a session is kept (shared state), until the session ends. */
export const latestSessionKey = (sid: string) => `session:latest:${sid}`;

/**
 * Ends a gateway session before its cookie expires (replaced by a sign-in or step-up, or signed
 * out): its newest state is forgotten, so no copy moves on to it, and its sid is refused at every
 * replica until `untilMs` (docs/gateway.md#session-rotation).
 */
export async function endGatewaySession(ctx: GatewayContext, sid: string, untilMs: number): Promise<void> {
  await ctx.state.del(latestSessionKey(sid));
  await ctx.endedSessions.end(sid, untilMs);
}

/**
 * Opens the session cookie, remembering recent openings by the exact Cookie header (bounded,
 * until the session's own expiry): a browser sends the same header on every request, and
 * decrypting it each time is the largest part of the gateway's own work per request.
 */
export async function openSession(ctx: GatewayContext, scope: RequestScope): Promise<GateSession | null> {
  const header = scope.cookieHeader;
  if (!header) return null;
  const at = ctx.now();
  const cached = ctx.caches.sessions.get(header, at);
  if (cached) return cached;
  const session = await readSessionCookies(scope.cookies, {
    keys: ctx.cookieKeys,
    now: at,
    secure: ctx.secure,
  });
  if (!session) return null;
  // Opened afresh: whether it ended at another replica is read from shared state (docs/gateway.md#session-rotation).
  await ctx.endedSessions.lookUp(session.sid);
  // Never cached past the moment its access token is due for refresh.
  const due =
    session.accessTokenExpiresAt !== undefined
      ? (session.accessTokenExpiresAt - REFRESH_SKEW_SECONDS) * 1000
      : Infinity;
  ctx.caches.sessions.set(header, session, Math.min((session.exp ?? 0) * 1000, at + SESSION_CACHE_MS, due), at);
  return session;
}

export function refreshDue(ctx: GatewayContext, session: GateSession): boolean {
  return (
    session.accessTokenExpiresAt !== undefined &&
    ctx.now() >= (session.accessTokenExpiresAt - REFRESH_SKEW_SECONDS) * 1000
  );
}

/** Opens the Set-Cookie values of a sealed session as stored in shared state (JSON list). */
export async function openSealedCookies(
  ctx: GatewayContext,
  value: string,
): Promise<{ session: GateSession; cookies: string[] } | null> {
  let cookies: unknown;
  try {
    cookies = JSON.parse(value);
  } catch {
    return null;
  }
  if (!Array.isArray(cookies) || !cookies.every((line) => typeof line === 'string')) return null;
  const jar: Record<string, string> = {};
  // Not the Cookie header's parse: the list also clears stale names (`name=`), and a cleared single
  // cookie must not stand in for the chunks written beside it.
  for (const line of cookies as string[]) {
    const pair = line.split(';')[0] ?? '';
    const eq = pair.indexOf('=');
    if (eq > 0 && eq < pair.length - 1) jar[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const session = await readSessionCookies(jar, { keys: ctx.cookieKeys, now: ctx.now(), secure: ctx.secure });
  return session ? { session, cookies: cookies as string[] } : null;
}
