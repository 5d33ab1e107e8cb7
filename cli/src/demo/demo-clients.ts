import type { GatewayPolicy } from '#lib/oauth/client-metadata.js';
import {
  ensureOperatorClient,
  type ControlPlaneServices,
} from '../../../control-plane/src/operator-tasks/operator-clients.js';

/**
 * The clients of `keyplane up`'s demo: its gateway and the in-place example page on its demo app,
 * both ordinary OIDC clients of the control plane, registered in-process and remembered by id in
 * the data dir (control-plane/src/clients/operator-client.ts).
 */
type DemoServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'config' | 'now'>;

/** The demo's routes, as the gateway enforces them (the policy registered for the demo gateway client). */
export const DEMO_POLICY: GatewayPolicy = {
  mode: 'enforce',
  routes: [
    { path: '/', min_assurance: 'passkey' },
    { path: '/admin', min_assurance: 'sensitive', principals: ['human'] },
    { path: '/public', public: true },
    { path: '/favicon.ico', public: true },
    { path: '/favicon.svg', public: true },
  ],
};

export interface DemoGatewayOptions {
  /** The gateway's public URL: its redirect URI is `<url>/_gate/callback`, its post-logout URI `<url>/`. */
  gatewayUrl: string;
  policy: GatewayPolicy;
  clientName?: string;
}

/** The demo gateway's client, with a fresh secret at every start. */
export async function ensureDemoGatewayClient(
  services: DemoServices,
  options: DemoGatewayOptions,
): Promise<{ clientId: string; clientSecret: string; created: boolean }> {
  const client = await ensureOperatorClient(services, {
    stateFile: 'up-gateway-client.json',
    label: 'the demo gateway client',
    metadata: {
      client_name: options.clientName ?? 'Keyplane demo gateway',
      redirect_uris: [`${options.gatewayUrl}/_gate/callback`],
      post_logout_redirect_uris: [`${options.gatewayUrl}/`],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: 'openid email offline_access',
      resources: [options.gatewayUrl],
      access: { humans: true, agents: true },
      gateway: options.policy,
      // The operator's own demo: no approval page, as an operator marks any first-party app.
      first_party: true,
    },
  });
  return { clientId: client.clientId, clientSecret: client.clientSecret!, created: client.created };
}

/** Where the example page lives on each origin; its registered redirect URI is `<origin>/in-place/callback`. */
export const IN_PLACE_DEMO_PATH = '/in-place/';

/**
 * The in-place example page (deploy/examples/in-place/, docs/in-place.md#try-it): a public client
 * with in-place sign-in on, whose redirect URIs follow the demo app's origins at every start.
 */
export async function ensureInPlaceDemoClient(
  services: DemoServices,
  options: { origins: readonly string[] },
): Promise<{ clientId: string; created: boolean }> {
  const { clientId, created } = await ensureOperatorClient(services, {
    stateFile: 'up-in-place-client.json',
    label: 'the in-place example client',
    metadata: {
      client_name: 'Keyplane in-place example',
      redirect_uris: options.origins.map((origin) => `${origin}${IN_PLACE_DEMO_PATH}callback`),
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'none',
      scope: 'openid email profile',
      in_place: true,
      // The operator's own example: a newcomer can sign up and sign in on the page at once, with
      // no approval page in between (the operator marks any app of their own first-party).
      first_party: true,
    },
  });
  return { clientId, created };
}
