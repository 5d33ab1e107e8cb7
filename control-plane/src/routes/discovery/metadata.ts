import type { FastifyInstance, RouteOptions } from 'fastify';

/*
 * What the app needs of discovery before any area is registered, apart from the routes: app.ts
 * imports this module, and the discovery routes load only when that area is (docs/platform.md#test-tiers).
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Advertise this route in the OIDC discovery document under `endpoint`, with extra metadata
     * (a function is called for each document: a value that changes while the server runs).
     */
    discovery?: { endpoint?: string; metadata?: Record<string, unknown> };
  }
}

export const JWKS_PATH = '/.well-known/jwks.json';

/** What the registered routes declared for the discovery document (`config.discovery`). */
export interface Collected {
  metadata: Record<string, unknown>;
}

/**
 * Discovery advertises exactly what exists: every endpoint and capability comes from the route
 * that implements it (`config.discovery`), so a feature that has not landed is never listed.
 */
export function collectDiscovery(app: FastifyInstance): Collected {
  const collected: Record<string, unknown> = {};
  app.addHook('onRoute', (route: RouteOptions) => {
    const discovery = route.config?.discovery;
    if (
      !discovery ||
      (route.method !== 'GET' &&
        route.method !== 'POST' &&
        !(Array.isArray(route.method) && route.method.includes('GET')))
    )
      return;
    if (discovery.endpoint) collected[discovery.endpoint] = `${app.kp.config.issuer}${route.url}`;
    for (const [key, value] of Object.entries(discovery.metadata ?? {})) {
      const before = collected[key];
      collected[key] = Array.isArray(before) && Array.isArray(value) ? [...new Set([...before, ...value])] : value;
    }
  });
  return { metadata: collected };
}

/** The OpenID Provider metadata: the fixed members plus what the registered routes declared. */
export function discoveryDocument(issuer: string, collected: Collected): Record<string, unknown> {
  return {
    // REQUIRED by OIDC Discovery 1.0 §3 and true of this server as it stands; every endpoint
    // and the capabilities that come with it are added by the routes that implement them.
    issuer,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    response_types_supported: ['code'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['ES256'],
    ...Object.fromEntries(
      Object.entries(collected.metadata).map(([key, value]) => [key, typeof value === 'function' ? value() : value]),
    ),
  };
}
