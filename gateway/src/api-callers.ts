import type { IncomingMessage } from 'node:http';
import { mcpResourceOf } from '#lib/gateway-protocol/mcp.js';
import { findRoute } from '#lib/gateway-protocol/request-path.js';
import { authenticateApiCaller } from './bearer.js';
import type { GatewayContext, Identified } from './context.js';

/** Only Bearer and DPoP are API credentials; another scheme (Basic for the app itself) is left to the upstream. */
export function isApiCaller(req: IncomingMessage): boolean {
  const authorization = req.headers['authorization'];
  return authorization !== undefined && /^(bearer|dpop)(\s|$)/i.test(authorization);
}

/** An API caller by its access token (and DPoP proof): verified locally against the control plane's keys. */
export async function identifyApiCaller(
  ctx: GatewayContext,
  req: IncomingMessage,
  method: string,
  path: string,
): Promise<Identified> {
  const policy = ctx.holder.current?.policy;
  const route = policy ? findRoute(policy.routes, path) : null;
  // An MCP route's resource may be requested by any client (docs/gateway.md#mcp-routes): its
  // audience, exactly, is what binds the token to it.
  const mcp = route?.mcp === true;
  const audience = mcp ? mcpResourceOf(route, ctx.publicUrl) : (route?.resource ?? ctx.publicUrl);
  const acceptClients = [...(ctx.config.clientId ? [ctx.config.clientId] : []), ...(policy?.accept_clients ?? [])];
  const caller = await authenticateApiCaller(
    { method, path, authorization: req.headers['authorization']!, dpop: req.headers['dpop'] },
    {
      issuer: ctx.controlPlane,
      audience,
      acceptClients,
      ...(mcp ? { anyClient: true } : {}),
      publicUrl: ctx.publicUrl,
      keys: ctx.keys,
      state: ctx.state,
      now: ctx.now,
      verifiedTokens: ctx.caches.verifiedTokens,
      dpopKeys: ctx.caches.dpopKeys,
      ...(ctx.dpopNonceKeys ? { dpopNonceKeys: ctx.dpopNonceKeys } : {}),
      ...(ctx.tokens?.introspect ? { exchangedStillActive: (token: string) => exchangedStillActive(ctx, token) } : {}),
    },
  );
  return { caller, session: null, api: true };
}

/**
 * How long an exchanged token the control plane called active is taken as active without asking
 * again: the longest it may outlive a revoked source here. A revoked one stays revoked.
 */
export const EXCHANGED_ACTIVE_FOR_MS = 5_000;

/** Asks the control plane (RFC 7662) whether an exchanged token is still active, at most every few seconds per token. */
async function exchangedStillActive(ctx: GatewayContext, token: string): Promise<boolean> {
  const now = ctx.now();
  const known = ctx.caches.exchangedTokens.get(token, now);
  if (known !== undefined) return known;
  const active = await ctx.tokens!.introspect!(token);
  const exp = ctx.caches.verifiedTokens.get(token, now)?.claims['exp'];
  const end = typeof exp === 'number' ? exp * 1000 : now + EXCHANGED_ACTIVE_FOR_MS;
  ctx.caches.exchangedTokens.set(token, active, active ? Math.min(end, now + EXCHANGED_ACTIVE_FOR_MS) : end, now);
  return active;
}
