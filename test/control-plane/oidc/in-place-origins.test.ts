import t from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { ADMIN, registerClient } from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['clients', 'discovery', 'oidc', 'orgs'] as const;

/**
 * Which in-place origins are published (docs/in-place.md#origins, docs/security.md): an account
 * that registers an in-place client does not add its origin to the issuer's WebAuthn related
 * origins, nor get credentialed CORS on the direct grant, until an org it administers proves the
 * origin's domain. Operator-registered clients are published as before.
 */
const EVIL = 'https://evil.example';

t.test("a session's in-place client is unpublished until an org it administers proves the domain", async (t) => {
  const { app, services, signIn } = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  await app.ready();
  const { browser } = await signIn({ username: 'mallory', assurance: 'sensitive' });
  const registered = await browser.post('/register', {
    client_name: 'Phish',
    redirect_uris: [`${EVIL}/cb`, 'https://login.evil.example/cb'],
    token_endpoint_auth_method: 'none',
    in_place: true,
  });
  t.equal(registered.statusCode, 201, registered.body);
  const clientId = registered.json().client_id as string;

  const related = async () =>
    ((await app.inject({ method: 'GET', url: '/.well-known/webauthn' })).json().origins as string[]).sort();
  const preflight = (origin: string) =>
    app.inject({
      method: 'OPTIONS',
      url: '/auth/authorize/direct',
      headers: { origin, 'access-control-request-method': 'POST' },
    });
  const options = (origin: string) =>
    app.inject({
      method: 'POST',
      url: '/auth/authorize/direct/options',
      headers: { origin },
      payload: { client_id: clientId },
    });

  t.same(await related(), [], 'not among the related origins');
  t.equal((await preflight(EVIL)).headers['access-control-allow-origin'], undefined, 'no CORS on the preflight');
  const refused = await options(EVIL);
  t.equal(refused.statusCode, 403);
  t.equal(refused.json().reason, 'origin_mismatch');
  t.equal(refused.headers['access-control-allow-origin'], undefined, 'no CORS on the answer');

  // Mallory's org proves evil.example: its origin and those under it are published; nothing else.
  const created = await browser.post('/auth/orgs/create', { name: 'Evil' });
  t.equal(created.statusCode, 200, created.body);
  const site = await browser.post('/org/evil/websites/add', { url: `${EVIL}/` });
  t.equal(site.statusCode, 200, site.body);
  const siteId = (await services.storage.orgs.sites((await services.storage.orgs.getBySlug('evil'))!.orgId))[0]!.siteId;
  // The proof itself (DNS TXT or the well-known file) has its own tests (test/control-plane/orgs).
  await services.storage.orgs.markSiteVerified(siteId, services.now());
  services.clientOrigins.forget();
  t.same(await related(), [EVIL, 'https://login.evil.example'], 'published once the domain is proved');
  t.equal((await preflight(EVIL)).headers['access-control-allow-origin'], EVIL);
  const allowed = await options(EVIL);
  t.equal(allowed.statusCode, 200, allowed.body);
  t.equal(allowed.headers['access-control-allow-origin'], EVIL);

  // A member's proof is not the account's to use: only orgs it administers count.
  const { browser: other } = await signIn({ username: 'trudy', assurance: 'sensitive' });
  const otherClient = await other.post('/register', {
    redirect_uris: [`${EVIL}/other`],
    token_endpoint_auth_method: 'none',
    in_place: true,
  });
  t.equal(otherClient.statusCode, 201);
  const theirs = await app.inject({
    method: 'POST',
    url: '/auth/authorize/direct/options',
    headers: { origin: EVIL },
    payload: { client_id: otherClient.json().client_id },
  });
  t.equal(theirs.json().reason, 'origin_mismatch', "another account's client is not published by Mallory's proof");
});

t.test('operator-registered in-place clients are published as before', async (t) => {
  const { app } = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  await app.ready();
  await registerClient(app, { in_place: true, redirect_uris: ['https://app.example.net/cb'] });
  const related = (await app.inject({ method: 'GET', url: '/.well-known/webauthn' })).json();
  t.same(related.origins, ['https://app.example.net']);
});
