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
  const routes = [...config.upstreams, ...(config.upstream ? [{ path: '/', url: config.upstream }] : [])].map(({ path, url }) => {
    const origin = new URL(url).origin;
    let proxy = pools.get(origin);
    if (!proxy) pools.set(origin, (proxy = open(origin)));
    return { path, origin, proxy };
  });
  return {
    find: (path: string) => findRoute(routes, path),
    async close(force: boolean) {
      await Promise.all([...pools.values()].map((proxy) => (force ? proxy.destroy() : proxy.close())));
    },
  };
}

/** The request's headers as the upstream gets them: the gateway's cookies out, its identity headers in. */
export async function upstreamHeaders(ctx: GatewayContext, req: IncomingMessage, who: Identified, origin: string): Promise<Record<string, string | string[] | undefined>> {
  const headers = { ...req.headers };
  // The gateway's own cookies stay at the edge: the upstream never sees session tokens.
  const cookie = headers['cookie'];
  if (cookie) {
    const kept = cookie.split(';').map((part) => part.trim()).filter((part) => part && !/^(__Host-)?kp_gate_/.test(part));
    if (kept.length > 0) headers['cookie'] = kept.join('; ');
    else delete headers['cookie'];
  }
  if (who.caller) Object.assign(headers, await identityHeaders(ctx, who.caller, who.session, origin));
  return headers;
}
