import t from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import {
  ADMIN,
  basicAuth,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  refresh,
  registerClient,
} from '../../helpers/oidc.js';

/**
 * Standard protocol answers (docs/errors.md#one-error-path): token, userinfo, introspection, revocation, registration, discovery
 * and JWKS carry their standard members and no `ok` (a relying party would take it for a claim,
 * as mod_auth_openidc's OIDC_CLAIM_ok showed); Keyplane's own API keeps the envelope.
 */
t.test('standard protocol answers carry no envelope member; Keyplane API answers keep it', async (t) => {
  const built = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const { app } = built;
  const client = await registerClient(app);
  const { browser } = await built.signIn({ username: 'alice' });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  const noEnvelope = (what: string, body: Record<string, unknown>) => t.notOk('ok' in body, `${what}: no ok member`);

  const token = await exchangeCode(app, client, code, verifier);
  t.equal(token.statusCode, 200);
  noEnvelope('token', token.json());
  const tokens = token.json() as { access_token: string; refresh_token: string };
  const refreshed = await refresh(app, client, tokens.refresh_token);
  t.equal(refreshed.statusCode, 200);
  noEnvelope('token (refresh)', refreshed.json());

  const bearer = { authorization: `Bearer ${refreshed.json().access_token}` };
  const userinfo = await app.inject({ method: 'GET', url: '/auth/userinfo', headers: bearer });
  t.equal(userinfo.statusCode, 200);
  t.match(userinfo.json(), { sub: /^usr_/, preferred_username: 'alice' });
  noEnvelope('userinfo', userinfo.json());

  const form = (payload: Record<string, string>) => ({
    headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(payload).toString(),
  });
  const introspection = await app.inject({
    method: 'POST',
    url: '/auth/introspect',
    ...form({ token: refreshed.json().access_token }),
  });
  t.match(introspection.json(), { active: true });
  noEnvelope('introspection', introspection.json());
  const revocation = await app.inject({
    method: 'POST',
    url: '/auth/revoke',
    ...form({ token: refreshed.json().refresh_token }),
  });
  t.equal(revocation.statusCode, 200);
  noEnvelope('revocation', revocation.json());

  for (const url of ['/.well-known/openid-configuration', '/.well-known/jwks.json']) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 200, url);
    noEnvelope(url, res.json());
  }

  const registration = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: { redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'none' },
  });
  t.equal(registration.statusCode, 201);
  noEnvelope('registration', registration.json());
  const { client_id: clientId, registration_access_token: rat } = registration.json();
  const manage = { authorization: `Bearer ${rat}` };
  const read = await app.inject({ method: 'GET', url: `/register/${clientId}`, headers: manage });
  noEnvelope('registration read', read.json());
  const update = await app.inject({
    method: 'PUT',
    url: `/register/${clientId}`,
    headers: manage,
    payload: { ...(read.json() as Record<string, unknown>), redirect_uris: ['https://app.example/cb2'] },
  });
  t.equal(update.statusCode, 200, update.body);
  noEnvelope('registration update', update.json());
  const deleted = await app.inject({ method: 'DELETE', url: `/register/${clientId}`, headers: manage });
  t.equal(deleted.statusCode, 200);
  noEnvelope('registration delete', deleted.json());

  // Errors keep RFC 6749's pair beside the envelope's reason.
  const refused = await refresh(app, client, 'not-a-refresh-token');
  t.match(refused.json(), { ok: false, reason: 'invalid_grant', error: 'invalid_grant' });
  // Keyplane's own API keeps the envelope.
  t.match((await browser.get('/account?format=json')).json(), { ok: true });
});
