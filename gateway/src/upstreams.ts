import type { GatewayConfig } from '#config/types.js';
import { findRoute } from '#lib/gateway-protocol/policy.js';
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
