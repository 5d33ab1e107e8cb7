import t from 'tap';
import { request } from 'undici';
import { computeS256Challenge } from '#lib/pkce/check-pkce.js';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import { authorizeAt, world, type World } from './real-world.js';

const POLICY: GatewayPolicy = {
  mode: 'enforce',
  routes: [{ path: '/', min_assurance: 'passkey' }, { path: '/api' }, { path: '/billing' }],
};

/** An access token the real control plane issues to the gateway's client for `resource` (RFC 8707), code flow with PKCE. */
async function tokenFor(w: World, resource: string): Promise<string> {
  const verifier = 'v'.repeat(43);
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: w.client.client_id,
    redirect_uri: `${w.gw.url}/_gate/callback`,
    scope: 'openid',
    state: 's'.repeat(16),
    code_challenge: computeS256Challenge(verifier),
    code_challenge_method: 'S256',
    resource,
  });
  const callback = await authorizeAt(w, `${w.cp.url}/auth/authorize?${params}`);
  const res = await request(`${w.cp.url}/auth/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${w.client.client_id}:${w.client.client_secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: `${w.gw.url}/_gate/callback`,
      code_verifier: verifier,
      resource,
    }).toString(),
  });
  const body = (await res.body.json()) as { access_token?: string };
  if (res.statusCode !== 200 || !body.access_token) throw new Error(`token: ${res.statusCode} ${JSON.stringify(body)}`);
  return body.access_token;
}

t.test(
  'a route registered as a resource takes only tokens for that resource; other routes keep the gateway URL',
  async (t) => {
    const w = await world(t, POLICY, {
      pull: true,
      register: (gw) => ({ resources: [`${gw}/api`, `${gw}/billing`, gw] }),
    });
    const routes = w.gw.running.gateway.configHolder.current!.policy.routes;
    t.match(
      routes.find((route) => route.path === '/api'),
      { resource: `${w.gw.url}/api` },
      "the signed config carries the route's resource",
    );
    const call = async (path: string, token: string) => {
      const res = await request(`${w.gw.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
    };
    const api = await tokenFor(w, `${w.gw.url}/api`);
    t.equal((await call('/api/items', api)).status, 200, 'a token for /api at /api');
    const wrong = await call('/billing/invoices', api);
    t.equal(wrong.status, 401, 'a token for /api at /billing');
    t.match(wrong.body, { ok: false, reason: 'invalid_token' });
    t.equal((await call('/app', api)).status, 401, 'a token for /api where the gateway URL is the audience');
    const gateway = await tokenFor(w, w.gw.url);
    t.equal((await call('/app', gateway)).status, 200, 'the gateway URL stays the default audience');
    t.equal((await call('/api/items', gateway)).status, 401, 'but not for a route with its own resource');
    t.equal(w.upstream.seen.length, 2);
  },
);
