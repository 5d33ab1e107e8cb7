import t, { type Test } from 'tap';
import { buildSignedIn, type Browser } from '../../helpers/signed-in.js';
import {
  ADMIN,
  basicAuth,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  refresh,
  registerClient,
  type Registered,
} from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['oidc', 'account', 'clients'] as const;

const GATEWAY_POLICY = { mode: 'enforce', routes: [{ path: '/', min_assurance: 'passkey' }] };

async function setup(t: Test) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  // A gateway client: its refresh token stands for the browser session, so it always ends with it.
  const gateway = await registerClient(built.app, { gateway: GATEWAY_POLICY });
  const app = await registerClient(built.app, { client_name: 'Notes' });
  return { ...built, gateway, rp: app };
}

async function tokensFor(
  app: Parameters<typeof exchangeCode>[0],
  browser: Browser,
  client: Registered,
  scope = 'openid email profile offline_access',
) {
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge, { scope }));
  const res = await exchangeCode(app, client, code, verifier);
  if (res.statusCode !== 200) throw new Error(res.body);
  return res.json() as { access_token: string; refresh_token: string; id_token: string };
}

async function introspect(app: Parameters<typeof exchangeCode>[0], client: Registered, token: string) {
  return (
    await app.inject({
      method: 'POST',
      url: '/auth/introspect',
      headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token }).toString(),
    })
  ).json() as { active: boolean };
}

t.test('sign-out ends the grants the session started: refresh refused, access token inactive', async (t) => {
  const { app, gateway, signIn } = await setup(t);
  const { browser } = await signIn({ username: 'ada' });
  const tokens = await tokensFor(app, browser, gateway);
  t.equal((await introspect(app, gateway, tokens.access_token)).active, true);
  const out = await browser.post('/auth/signout');
  t.equal(out.statusCode, 200);
  const res = await refresh(app, gateway, tokens.refresh_token);
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'invalid_grant');
  t.equal(
    (await introspect(app, gateway, tokens.access_token)).active,
    false,
    'the access token is inactive at introspection',
  );
  t.equal((await introspect(app, gateway, tokens.refresh_token)).active, false);
  const userinfo = await app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  t.equal(userinfo.statusCode, 401, 'and at userinfo');
});

t.test("revoking a session, a device, or RP-initiated logout ends that session's grants", async (t) => {
  const { app, gateway, signIn } = await setup(t);
  const { browser: laptop, identityId } = await signIn({ username: 'ada' });
  const { browser: phone } = await signIn({ username: 'ada' });
  const { browser: tablet } = await signIn({ username: 'ada' });
  const fromLaptop = await tokensFor(app, laptop, gateway);
  const fromPhone = await tokensFor(app, phone, gateway);
  const fromTablet = await tokensFor(app, tablet, gateway);

  const own = (browser: Browser) =>
    browser
      .get('/account?format=json')
      .then(
        (res) =>
          res.json().sessions.find((s: { current: boolean }) => s.current) as { identifier: string; deviceId: string },
      );
  t.equal((await laptop.post('/auth/sessions/revoke', { identifier: (await own(phone)).identifier })).statusCode, 200);
  t.equal((await refresh(app, gateway, fromPhone.refresh_token)).json().error, 'invalid_grant', 'sessions/revoke');
  t.equal(
    (await refresh(app, gateway, fromLaptop.refresh_token)).statusCode,
    200,
    "another session's grant is untouched",
  );

  t.equal((await laptop.post('/auth/devices/revoke', { deviceId: (await own(tablet)).deviceId })).statusCode, 200);
  t.equal((await refresh(app, gateway, fromTablet.refresh_token)).json().error, 'invalid_grant', 'devices/revoke');

  const again = await tokensFor(app, laptop, gateway);
  const logout = await laptop.get(`/auth/logout?id_token_hint=${again.id_token}`);
  t.equal(logout.statusCode, 200);
  t.equal((await refresh(app, gateway, again.refresh_token)).json().error, 'invalid_grant', '/auth/logout');
  t.ok(identityId);
});

t.test('the refresh grant checks that the session is still live, however it ended', async (t) => {
  const { app, gateway, signIn, services } = await setup(t);
  const { browser, identityId } = await signIn({ username: 'ada' });
  const tokens = await tokensFor(app, browser, gateway);
  const [session] = await services.storage.sessions.listLive(identityId, services.now());
  // Ended behind the routes' back (as an expiry would): the grant is still unrevoked in storage.
  await services.storage.sessions.revoke(identityId, session!.sessionId, services.now());
  const res = await refresh(app, gateway, tokens.refresh_token);
  t.equal(res.json().error, 'invalid_grant');
  t.match(res.json().error_description, /sign-in .* has ended/);
});

t.test('an authorization code cannot be redeemed after the user signed out', async (t) => {
  const { app, rp, signIn } = await setup(t);
  const { browser } = await signIn({ username: 'ada' });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(rp, challenge));
  await browser.post('/auth/signout');
  const res = await exchangeCode(app, rp, code, verifier);
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'invalid_grant');
});

t.test(
  "an offline grant the user approved for a non-gateway app outlives the session; a gateway's never does",
  async (t) => {
    const { app, rp, gateway, signIn } = await setup(t);
    const { browser } = await signIn({ username: 'ada' });
    const offline = await tokensFor(app, browser, rp);
    const online = await tokensFor(app, browser, rp, 'openid email');
    const gatewayTokens = await tokensFor(app, browser, gateway);
    await browser.post('/auth/signout');
    const res = await refresh(app, rp, offline.refresh_token);
    t.equal(res.statusCode, 200, 'offline_access approved on the one-tap page');
    t.equal((await introspect(app, rp, online.access_token)).active, false, 'the grant without offline_access ended');
    t.equal(
      (await refresh(app, gateway, gatewayTokens.refresh_token)).json().error,
      'invalid_grant',
      'a gateway grant ends',
    );
  },
);

t.test('revoking a client ends its refresh families and its access tokens', async (t) => {
  const { app, signIn } = await setup(t);
  const { browser } = await signIn({ username: 'ada', assurance: 'sensitive' });
  const created = await browser.post('/apps/register', {
    client_name: 'Mine',
    redirect_uris: ['https://notes.example.com/callback'],
    token_endpoint_auth_method: 'client_secret_basic',
    grant_types: ['authorization_code', 'refresh_token'],
    scope: 'openid offline_access',
  });
  t.equal(created.statusCode, 201, created.body);
  const mine = { client_id: created.json().client_id, client_secret: created.json().client_secret } as Registered;
  const tokens = await tokensFor(app, browser, mine, 'openid offline_access');
  const other = await registerClient(app);
  const otherTokens = await tokensFor(app, browser, other);
  t.equal((await browser.post(`/apps/${mine.client_id}/revoke`)).statusCode, 200);
  t.equal(
    (
      await app.inject({
        method: 'GET',
        url: '/auth/userinfo',
        headers: { authorization: `Bearer ${tokens.access_token}` },
      })
    ).statusCode,
    401,
    'userinfo refuses its access token',
  );
  // Introspection by a resource server that registered nothing of it, or by another client, says inactive.
  t.equal((await introspect(app, other, tokens.access_token)).active, false);
  t.equal((await introspect(app, other, otherTokens.access_token)).active, true, 'other clients are untouched');
  const grant = await app.kp.storage.oidc.findRefreshToken(
    (await import('#lib/crypto/sha256.js')).sha256Hex(tokens.refresh_token),
  );
  t.not((await app.kp.storage.oidc.getGrant(grant!.grantId))?.revokedAt, null, 'its refresh family is revoked');
});
