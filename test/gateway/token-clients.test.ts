import t from 'tap';
import { decodeJwt } from 'jose';
import { request } from 'undici';
import { DependencyUnavailableError } from '#lib/errors/dependency-outage.js';
import type { TokenClient } from '../../gateway/src/token-client.js';
import { CLIENT_ID, signAccessToken, startTestGateway, startUpstream } from './helpers.js';

const ROUTES = [{ path: '/', min_assurance: 'passkey' as const }];

/** A token client whose only use here is the control plane's introspection answer. */
function introspectingClient(introspect: (token: string) => Promise<boolean>): TokenClient {
  const unused = () => Promise.reject(new Error('not used'));
  return { exchangeCode: unused, refresh: unused, introspect };
}

t.test("only tokens of the gateway's own client or of accept_clients pass", async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: { mode: 'enforce', routes: ROUTES } });
  const call = async (token: string) => {
    const res = await request(`${gw.url}/api/x`, { headers: { authorization: `Bearer ${token}` } });
    return {
      status: res.statusCode,
      body: (await res.body.json()) as Record<string, unknown>,
      challenge: String(res.headers['www-authenticate'] ?? ''),
    };
  };
  t.equal((await call(await signAccessToken({ audience: gw.url }))).status, 200, "the gateway's own client");
  const foreign = await call(await signAccessToken({ audience: gw.url, clientId: 'attacker-app', sub: 'victim' }));
  t.equal(foreign.status, 401, "a token another client obtained for the gateway's URL");
  t.match(foreign.body, { ok: false, reason: 'invalid_token' });
  t.match(foreign.challenge, /error="invalid_token"/);
  t.notOk(
    upstream.seen.some((seen) => seen.headers['x-auth-subject'] === 'victim'),
    'the victim never reached the upstream',
  );

  await gw.configure({ mode: 'enforce', accept_clients: ['partner-api'], routes: ROUTES });
  t.equal(
    (await call(await signAccessToken({ audience: gw.url, clientId: 'partner-api' }))).status,
    200,
    'a listed client',
  );
  t.equal(
    (await call(await signAccessToken({ audience: gw.url, clientId: 'attacker-app' }))).status,
    401,
    'an unlisted one still not',
  );
  t.equal(
    (await call(await signAccessToken({ audience: gw.url, clientId: CLIENT_ID }))).status,
    200,
    'its own stays accepted',
  );
});

t.test('each route checks its own resource as the audience; the public URL is the default', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url });
  await gw.configure({
    mode: 'enforce',
    routes: [
      ...ROUTES,
      { path: '/api', resource: `${gw.url}/api` },
      { path: '/billing', resource: `${gw.url}/billing` },
    ],
  });
  const status = async (path: string, audience: string) =>
    (await request(`${gw.url}${path}`, { headers: { authorization: `Bearer ${await signAccessToken({ audience })}` } }))
      .statusCode;
  t.equal(await status('/api/items', `${gw.url}/api`), 200, 'a token for /api at /api');
  t.equal(await status('/API/items', `${gw.url}/api`), 200, 'in any case');
  t.equal(await status('/billing/x', `${gw.url}/api`), 401, 'a token for /api at /billing');
  t.equal(await status('/api/items', gw.url), 401, 'a token for the gateway at a route with its own resource');
  t.equal(await status('/other', gw.url), 200, 'the public URL for a route without a resource');
  t.equal(await status('/other', `${gw.url}/api`), 401, "and not a route's resource there");
});

t.test(
  'an exchanged token reaches the upstream with its actor in X-Auth-Actor and the chain in the assertion, a forged header never',
  async (t) => {
    const upstream = await startUpstream(t);
    // The control plane's introspection answer, which the gateway asks for an exchanged token
    // (the real one: test/interop/openid-client/agent-exchange.test.ts).
    const introspected: string[] = [];
    const tokenClient = introspectingClient(async (token) => {
      introspected.push(token);
      return true;
    });
    const gw = await startTestGateway(t, {
      upstream: upstream.url,
      policy: { mode: 'enforce', routes: ROUTES },
      deps: { tokenClient },
    });
    const token = await signAccessToken({
      audience: gw.url,
      sub: 'person-1',
      act: { sub: CLIENT_ID, act: { sub: 'notes-app' } },
    });
    const res = await request(`${gw.url}/api/delegated`, {
      headers: { authorization: `Bearer ${token}`, 'x-auth-actor': 'forged', x_auth_actor: 'forged' },
    });
    t.equal(res.statusCode, 200);
    await res.body.dump();
    const seen = upstream.seen.find((s) => s.url === '/api/delegated');
    t.equal(seen?.headers['x-auth-subject'], 'person-1', 'the person is still the subject');
    t.equal(seen?.headers['x-auth-actor'], CLIENT_ID, 'the one acting now');
    t.match(
      decodeJwt(String(seen?.headers['x-auth-assertion'])),
      { sub: 'person-1', act: { sub: CLIENT_ID, act: { sub: 'notes-app' } } },
      'the whole chain in the signed assertion',
    );
    const plain = await request(`${gw.url}/api/plain`, {
      headers: { authorization: `Bearer ${await signAccessToken({ audience: gw.url })}`, 'x-auth-actor': 'forged' },
    });
    await plain.body.dump();
    const plainSeen = upstream.seen.find((s) => s.url === '/api/plain')!;
    t.notOk('x-auth-actor' in plainSeen.headers, 'no actor, no header');
    t.notOk('act' in decodeJwt(String(plainSeen.headers['x-auth-assertion'])), 'and no act in the assertion');
    t.same(introspected, [token], 'only the exchanged token was introspected, once while the answer holds');
  },
);

t.test('an exchanged token is refused when the control plane calls it inactive, or cannot be asked', async (t) => {
  const upstream = await startUpstream(t);
  const inactive = await startTestGateway(t, {
    upstream: upstream.url,
    policy: { mode: 'enforce', routes: ROUTES },
    deps: { tokenClient: introspectingClient(async () => false) },
  });
  const withoutCredentials = await startTestGateway(t, {
    upstream: upstream.url,
    policy: { mode: 'enforce', routes: ROUTES },
  });
  for (const [gw, what] of [
    [inactive, 'revoked at the control plane'],
    [withoutCredentials, 'a gateway without client credentials cannot ask'],
  ] as const) {
    const token = await signAccessToken({ audience: gw.url, sub: 'person-1', act: { sub: CLIENT_ID } });
    const res = await request(`${gw.url}/api/delegated`, { headers: { authorization: `Bearer ${token}` } });
    t.equal(res.statusCode, 401, what);
    t.match(await res.body.json(), { ok: false, reason: 'invalid_token' });
  }
  const unanswered = await startTestGateway(t, {
    upstream: upstream.url,
    policy: { mode: 'enforce', routes: ROUTES },
    deps: {
      tokenClient: introspectingClient(() =>
        Promise.reject(new DependencyUnavailableError('control_plane', 'timeout', 'no answer')),
      ),
    },
  });
  const token = await signAccessToken({ audience: unanswered.url, sub: 'person-1', act: { sub: CLIENT_ID } });
  const res = await request(`${unanswered.url}/api/delegated`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(res.statusCode, 503, 'a control plane that does not answer is an outage, not a verdict on the token');
  await res.body.dump();
  t.notOk(
    upstream.seen.some((seen) => seen.url === '/api/delegated'),
    'none reached the upstream',
  );
});
