import type { IncomingMessage } from 'node:http';
import { buildUpstreamAssertion } from '#lib/gateway-protocol/assertion.js';
import { buildIdentityHeaders } from '#lib/gateway-protocol/identity-headers.js';
import type { Caller, RoutePolicy } from '#lib/gateway-protocol/policy.js';
import type { GateSession } from '#lib/gateway-protocol/session-cookie.js';
import type { GatewayContext, Identified } from './context.js';
import { isKeyplaneCookie } from './upstreams.js';

/** `audience` is the upstream origin the request goes to (the gateway's own URL in forward-auth mode). */
export async function assertionFor(
  ctx: GatewayContext,
  caller: Caller,
  session: GateSession | null,
  audience: string,
): Promise<string> {
  const { config } = ctx;
  const email = session?.emailVerified === true ? session.email : undefined;
  const orgs = session?.orgs;
  const orgsKey = orgs?.map(({ slug, role }) => `${slug}:${role}`).join(',') ?? '-';
  const groups = session?.groups;
  const groupsKey = groups?.join(',') ?? '-';
  const idp = session?.idp;
  const actors = caller.actors?.length ? caller.actors : undefined;
  const key = `${audience}\u0000${caller.subject}\u0000${caller.principalType}\u0000${caller.assurance}\u0000${email ?? ''}\u0000${orgsKey}\u0000${groupsKey}\u0000${idp ? JSON.stringify(idp) : '-'}\u0000${actors ? JSON.stringify(actors) : '-'}`;
  const at = ctx.now();
  const cached = ctx.caches.assertions.get(key, at);
  if (cached) return cached;
  // One signature per identity for half the assertion lifetime: ES256 signing per request
  // would dominate the hot path, and an assertion is a statement, not a one-time token.
  const jwt = await buildUpstreamAssertion(
    {
      issuer: ctx.publicUrl,
      audience,
      subject: caller.subject,
      principalType: caller.principalType,
      assurance: caller.assurance,
      ...(email ? { email } : {}),
      ...(orgs ? { orgs } : {}),
      ...(groups ? { groups } : {}),
      ...(idp ? { idp } : {}),
      ...(actors ? { actors } : {}),
      now: at,
      ttlSeconds: config.assertionLifetime,
    },
    ctx.signingKey,
  );
  ctx.caches.assertions.set(key, jwt, at + (config.assertionLifetime * 1000) / 2, at);
  return jwt;
}

/** The identity headers (docs/gateway.md#identity-to-the-upstream) for a caller the policy let through. */
export async function identityHeaders(
  ctx: GatewayContext,
  caller: Caller,
  session: GateSession | null,
  audience: string,
): Promise<Record<string, string>> {
  return buildIdentityHeaders({
    subject: caller.subject,
    principalType: caller.principalType,
    assurance: caller.assurance,
    ...(session?.email ? { email: session.email, emailVerified: session.emailVerified === true } : {}),
    ...(session?.orgs ? { orgs: session.orgs } : {}),
    ...(session?.groups ? { groups: session.groups } : {}),
    ...(session?.idp ? { idp: session.idp.id } : {}),
    assertion: await assertionFor(ctx, caller, session, audience),
    ...(caller.actors?.length ? { actors: caller.actors } : {}),
  });
}

/**
 * The Cookie header without Keyplane's cookies ('' when none is left). Not cached by header: a
 * cache keyed by whole Cookie headers would let a client that sends a new large header each time
 * fill memory, and the split costs about what hashing the key would.
 */
function withoutKeyplaneCookies(header: string): string {
  return header
    .split(';')
    .map((part) => part.trim())
    .filter((part) => part && !isKeyplaneCookie(part.split('=')[0]!.trim()))
    .join('; ');
}

/**
 * The request's headers as the upstream gets them: Keyplane's cookies out, the gateway's identity
 * headers in, and neither Host nor Expect (the proxy hop's `ForwardInput.headers`). An MCP route
 * keeps the caller's token at the edge unless it says `forward_token: true`: the token names the
 * gateway's resource, and MCP authorization forbids passing it through; the app gets the assertion.
 */
export async function upstreamHeaders(
  ctx: GatewayContext,
  req: IncomingMessage,
  who: Identified,
  origin: string,
  route?: Pick<RoutePolicy, 'mcp' | 'forward_token'> | null,
): Promise<Record<string, string | string[]>> {
  const keepsToken = route?.mcp === true && route.forward_token !== true;
  const headers: Record<string, string | string[]> = {};
  for (const name in req.headers) {
    const value = req.headers[name];
    if (value === undefined || name === 'host' || name === 'expect') continue;
    if (keepsToken && (name === 'authorization' || name === 'dpop')) continue;
    // Session cookies stay at the edge: the upstream never sees the gateway's tokens or the control plane's session.
    if (name === 'cookie' && typeof value === 'string') {
      const kept = withoutKeyplaneCookies(value);
      if (kept) headers[name] = kept;
    } else {
      headers[name] = value;
    }
  }
  if (who.caller) Object.assign(headers, await identityHeaders(ctx, who.caller, who.session, origin));
  return headers;
}
