import type { IncomingMessage } from 'node:http';
import type { GatewayConfig } from '../../config/types.js';
import { findRoute } from '../../lib/gateway/policy.js';
import type { GatewayContext, Identified } from './context.js';
import { identityHeaders } from './identity.js';
import type { UpstreamProxy } from './proxy.js';

export interface UpstreamRoute {
  path: string;
  origin: string;
  proxy: UpstreamProxy;
}

export interface UpstreamRoutes {
  find(path: string): UpstreamRoute | null;
  close(force: boolean): Promise<void>;
}

/** The upstreams by path prefix (`upstreams`, then `upstream` for everything else), one keep-alive pool per origin. */
export function routeUpstreams(config: GatewayConfig, open: (origin: string) => UpstreamProxy): UpstreamRoutes {
  const pools = new Map<string, UpstreamProxy>();
  const routes = [...config.upstreams, ...(config.upstream ? [{ path: '/', url: config.upstream }] : [])].map(
    ({ path, url }) => {
      const origin = new URL(url).origin;
      let proxy = pools.get(origin);
      if (!proxy) pools.set(origin, (proxy = open(origin)));
      return { path, origin, proxy };
    },
  );
  return {
    find: (path: string) => findRoute(routes, path),
    async close(force: boolean) {
      await Promise.all([...pools.values()].map((proxy) => (force ? proxy.destroy() : proxy.close())));
    },
  };
}

/**
 * Keyplane's own cookies: the gateway's `kp_gate_*` and the control plane's `kp_session`,
 * `kp_device` (with `__Host-`/`__Secure-` prefixes on https). Any `kp_` name is Keyplane's:
 * browsers send every cookie of a host to every port (RFC 6265 §8.5), so where the control plane
 * shares the gateway's host (`npm start`) its session would otherwise reach every app.
 */
export function isKeyplaneCookie(name: string): boolean {
  return /^(__Host-|__Secure-)?kp_/i.test(name);
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
 * headers in, and neither Host nor Expect (the proxy hop's `ForwardInput.headers`).
 */
export async function upstreamHeaders(
  ctx: GatewayContext,
  req: IncomingMessage,
  who: Identified,
  origin: string,
): Promise<Record<string, string | string[]>> {
  const headers: Record<string, string | string[]> = {};
  for (const name in req.headers) {
    const value = req.headers[name];
    if (value === undefined || name === 'host' || name === 'expect') continue;
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
