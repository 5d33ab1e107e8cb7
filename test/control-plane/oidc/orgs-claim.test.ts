import t, { type Test } from 'tap';
import { decodeJwt } from 'jose';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { ADMIN, exchangeCode, goodRequest, obtainCode, pkcePair, refresh, registerClient } from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['orgs', 'oidc', 'discovery', 'clients'] as const;

/** Scope `orgs` (docs/orgs.md#groups-for-relying-parties): the `orgs` claim in the ID token and userinfo. */

async function signedInMember(t: Test) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const { browser, identityId } = await built.signIn({ username: 'alice' });
  for (const name of ['Acme', 'Bolt'])
    t.equal((await browser.post('/auth/orgs/create', { name })).statusCode, 200, `created ${name}`);
  return { ...built, browser, identityId };
}

async function tokensFor(t: Test, scope: string, registered = 'openid email profile orgs offline_access') {
  const built = await signedInMember(t);
  const client = await registerClient(built.app, { scope: registered });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(built.browser, goodRequest(client, challenge, { scope }));
  const tokens = (await exchangeCode(built.app, client, code, verifier)).json();
  return { ...built, client, tokens };
}

t.test('scope orgs states the memberships as [{slug, role}] in the ID token and userinfo', async (t) => {
  const { app, tokens, client } = await tokensFor(t, 'openid orgs offline_access');
  const expected = [
    { slug: 'acme', role: 'owner' },
    { slug: 'bolt', role: 'owner' },
  ];
  t.same(decodeJwt(tokens.id_token).orgs, expected);
  const info = await app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  t.equal(info.statusCode, 200);
  t.same(info.json().orgs, expected);
  const refreshed = (await refresh(app, client, tokens.refresh_token)).json();
  t.same(decodeJwt(refreshed.id_token).orgs, expected, 'a refreshed ID token states them again');
});

t.test('without scope orgs, or when the client did not register it, nothing is said', async (t) => {
  const asked = await tokensFor(t, 'openid email offline_access');
  t.equal(decodeJwt(asked.tokens.id_token).orgs, undefined);
  const info = await asked.app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { authorization: `Bearer ${asked.tokens.access_token}` },
  });
  t.equal(info.json().orgs, undefined);

  const unregistered = await tokensFor(t, 'openid orgs', 'openid email profile');
  t.equal(unregistered.tokens.scope, 'openid', 'orgs is not granted to a client that did not register it');
  t.equal(decodeJwt(unregistered.tokens.id_token).orgs, undefined);
});

t.test('orgs is offered in discovery but not registered by default', async (t) => {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const discovery = (await built.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
  t.ok(discovery.scopes_supported.includes('orgs'));
  t.ok(discovery.claims_supported.includes('orgs'));
  const res = await built.app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: { redirect_uris: ['https://notes.example.com/callback'] },
  });
  t.equal(res.statusCode, 201);
  t.notOk(String(res.json().scope).split(' ').includes('orgs'), 'a membership list is released only when asked for');
});
