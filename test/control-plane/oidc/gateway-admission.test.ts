import t, { type Test } from 'tap';
import { NO_ROUTE_ADMITS } from '#lib/access/evaluate-access.js';
import { sessionRouteRules, type GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import {
  ADMIN,
  REDIRECT,
  authorizeUrl,
  goodRequest,
  pkcePair,
  redirectParams,
  registerClient,
} from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['oidc', 'clients', 'orgs', 'health'] as const;

/**
 * A gateway's route rules asked before a consent page (docs/gateway.md#access-rules): a person no
 * session route admits hears `access_denied` at once, never a consent page for an app no route
 * would let them into; a member, an observing gateway, a route open to anyone signed in and a
 * first-party gateway are not held up.
 */

const ACME_ONLY: GatewayPolicy = { mode: 'enforce', routes: [{ path: '/', allow: { orgs: [{ slug: 'acme' }] } }] };

t.test('sessionRouteRules: only an enforcing gateway whose every session route has rules', async (t) => {
  t.same(sessionRouteRules(ACME_ONLY), [{ orgs: [{ slug: 'acme' }] }]);
  t.equal(sessionRouteRules({ ...ACME_ONLY, mode: 'observe' }), null, 'observe');
  t.equal(sessionRouteRules({ ...ACME_ONLY, mode: 'canary' }), null, 'canary');
  t.equal(
    sessionRouteRules({ mode: 'enforce', routes: [...ACME_ONLY.routes, { path: '/open' }] }),
    null,
    'one route admits anyone signed in',
  );
  t.same(
    sessionRouteRules({
      mode: 'enforce',
      routes: [
        ...ACME_ONLY.routes,
        { path: '/health', public: true },
        { path: '/mcp', mcp: true },
        { path: '/team', allow: { groups: ['acme/ops'] } },
      ],
    }),
    [{ orgs: [{ slug: 'acme' }] }, { groups: ['acme/ops'] }],
    'public and MCP routes take no session',
  );
  t.equal(sessionRouteRules({ mode: 'enforce', routes: [{ path: '/', public: true }] }), null, 'no session route');
});

async function setup(t: Test, gateway: GatewayPolicy, extra: Record<string, unknown> = {}) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const owner = (await built.signIn({ username: 'olivia', assurance: 'passkey' })).browser;
  const created = await owner.request('POST', '/auth/orgs/create', { name: 'Acme' }, { accept: 'application/json' });
  if (created.statusCode !== 200) throw new Error(`org: ${created.body}`);
  const client = await registerClient(built.app, { gateway, ...extra });
  const stranger = (await built.signIn({ username: 'sam', assurance: 'passkey' })).browser;
  return { ...built, client, owner, stranger, challenge: pkcePair().challenge };
}

t.test('a stranger hears access_denied before any consent page, with a receipt; the owner is asked', async (t) => {
  const { app, client, owner, stranger, challenge } = await setup(t, ACME_ONLY);
  const refused = await stranger.get(authorizeUrl(goodRequest(client, challenge)));
  t.equal(refused.statusCode, 302, refused.body.slice(0, 200));
  const params = redirectParams(refused);
  t.equal(params.base, REDIRECT);
  t.equal(params.get('error'), 'access_denied');
  t.equal(params.get('error_description'), NO_ROUTE_ADMITS);
  t.equal(params.get('state'), 'st-123');
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /keyplane_receipts_total\{kind="signin\.access_denied"\} [1-9]/, 'a receipt of the refusal');

  const asked = await owner.get(authorizeUrl(goodRequest(client, challenge)));
  t.equal(asked.statusCode, 200, 'a member of acme sees the consent page');
  t.match(asked.body, /data-action="continue"/);
});

t.test('nothing held up: an observing gateway, a route open to anyone signed in, a first-party gateway', async (t) => {
  for (const [why, gateway, extra] of [
    ['observe', { ...ACME_ONLY, mode: 'observe' }, {}],
    ['an open route', { mode: 'enforce', routes: [...ACME_ONLY.routes, { path: '/open' }] }, {}],
  ] as const) {
    const { client, stranger, challenge } = await setup(t, gateway as GatewayPolicy, extra);
    const res = await stranger.get(authorizeUrl(goodRequest(client, challenge)));
    t.equal(res.statusCode, 200, `${why}: the consent page`);
    t.match(res.body, /data-action="continue"/, why);
  }
  const { client, stranger, challenge } = await setup(t, ACME_ONLY, { first_party: true });
  const res = await stranger.get(authorizeUrl(goodRequest(client, challenge)));
  t.equal(res.statusCode, 302, 'first party: no consent page to come before');
  t.ok(redirectParams(res).get('code'), 'a code; the gateway answers its own 403');
});
