import t from 'tap';
import { readFileSync } from 'node:fs';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import { TEST_ISSUER } from '../../helpers/build.js';
import { buildSignedIn, type Browser } from '../../helpers/signed-in.js';
import { ADMIN, registerClient } from '../../helpers/oidc.js';
import { createOrg } from '../../../control-plane/src/orgs/membership.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['fedcm', 'discovery', 'clients', 'account', 'admin'] as const;
const RP = 'https://notes.example.com';
const WEBIDENTITY = { 'sec-fetch-dest': 'webidentity' };

async function setup(t: Parameters<typeof buildSignedIn>[0], metadata: Record<string, unknown> = {}) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const client = await registerClient(built.app, {
    in_place: true,
    policy_uri: 'https://notes.example.com/privacy',
    tos_uri: 'https://notes.example.com/terms',
    ...metadata,
  });
  const other = await registerClient(built.app, { in_place: true, redirect_uris: ['https://other.example.org/cb'] });
  const { browser, identityId } = await built.signIn({ username: 'alice' });
  return { ...built, client, other, browser, identityId };
}

function form(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString();
}

function assert(browser: Browser, fields: Record<string, string>, headers: Record<string, string | undefined> = {}) {
  const all: Record<string, string> = {
    ...WEBIDENTITY,
    origin: RP,
    'content-type': 'application/x-www-form-urlencoded',
  };
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) delete all[name];
    else all[name] = value;
  }
  return browser.request('POST', '/fedcm/assertion', form(fields), all);
}

t.test('the well-known file and the provider configuration name every endpoint', async (t) => {
  const { app } = await setup(t);
  t.same((await app.inject({ method: 'GET', url: '/.well-known/web-identity' })).json(), {
    provider_urls: [`${TEST_ISSUER}/fedcm/config.json`],
    accounts_endpoint: `${TEST_ISSUER}/fedcm/accounts`,
    login_url: `${TEST_ISSUER}/auth`,
  });
  const config = await app.inject({ method: 'GET', url: '/fedcm/config.json' });
  t.match(config.headers['content-type'], /application\/json/);
  t.match(config.json(), {
    accounts_endpoint: `${TEST_ISSUER}/fedcm/accounts`,
    client_metadata_endpoint: `${TEST_ISSUER}/fedcm/client-metadata`,
    id_assertion_endpoint: `${TEST_ISSUER}/fedcm/assertion`,
    disconnect_endpoint: `${TEST_ISSUER}/fedcm/disconnect`,
    login_url: `${TEST_ISSUER}/auth`,
    branding: { name: 'Keyplane' },
  });
});

t.test('sign-in and sign-out send the Login Status header', async (t) => {
  const { browser } = await setup(t);
  const signedOut = await browser.post('/auth/signout');
  t.equal(signedOut.headers['set-login'], 'logged-out');
  const { app } = await setup(t);
  const res = await app.inject({
    method: 'POST',
    url: '/test/sign-in',
    payload: { username: 'bob', assurance: 'passkey' },
  });
  t.equal(res.headers['set-login'], 'logged-in');
});

t.test("accounts: the signed-in account with its approved clients, only for the browser's FedCM fetch", async (t) => {
  const { app, browser, identityId, client, services } = await setup(t);
  const missing = await browser.get('/fedcm/accounts');
  t.equal(missing.statusCode, 400);
  t.match(missing.json(), {
    ok: false,
    reason: 'webidentity_required',
    error: { code: 'invalid_request', error: 'invalid_request' },
  });
  t.equal(
    (await browser.get('/fedcm/accounts', { 'sec-fetch-dest': 'document' })).json().reason,
    'webidentity_required',
  );
  const anonymous = await app.inject({ method: 'GET', url: '/fedcm/accounts', headers: WEBIDENTITY });
  t.equal(anonymous.statusCode, 401);
  t.match(anonymous.json().error, { code: 'access_denied' });

  await services.storage.oidc.recordApproval(identityId, client.client_id, { scopes: ['openid'], resources: [] }, 1);
  const res = await browser.get('/fedcm/accounts', WEBIDENTITY);
  t.equal(res.statusCode, 200);
  t.same(res.json(), {
    accounts: [
      {
        id: identityId,
        name: 'alice',
        username: 'alice',
        approved_clients: [client.client_id],
        login_hints: ['alice'],
      },
    ],
  });
});

t.test('client metadata: privacy and terms for a registered origin only, without CORS for others', async (t) => {
  const { app, client, other } = await setup(t);
  const ok = await app.inject({
    method: 'GET',
    url: `/fedcm/client-metadata?client_id=${client.client_id}`,
    headers: { origin: RP },
  });
  t.equal(ok.statusCode, 200);
  t.same(ok.json(), {
    privacy_policy_url: 'https://notes.example.com/privacy',
    terms_of_service_url: 'https://notes.example.com/terms',
  });
  t.equal(ok.headers['access-control-allow-origin'], RP);
  t.equal(ok.headers['access-control-allow-credentials'], 'true');
  for (const [name, origin] of [
    ['a foreign origin', 'https://evil.example.com'],
    ["another client's origin", 'https://other.example.org'],
    ['no Origin', undefined],
  ] as const) {
    const res = await app.inject({
      method: 'GET',
      url: `/fedcm/client-metadata?client_id=${client.client_id}`,
      headers: origin ? { origin } : {},
    });
    t.equal(res.statusCode, 403, name);
    t.match(res.json(), { reason: 'origin_mismatch', error: { code: 'unauthorized_client' } }, name);
    t.equal(res.headers['access-control-allow-origin'], undefined, `${name}: no CORS`);
    t.equal(res.headers['access-control-allow-credentials'], undefined, `${name}: no CORS`);
  }
  const unknown = await app.inject({
    method: 'GET',
    url: '/fedcm/client-metadata?client_id=cl_nobody',
    headers: { origin: RP },
  });
  t.equal(unknown.statusCode, 404);
  t.equal(other.client_id.startsWith('cl_'), true);
});

t.test(
  'assertion: an ES256 ID token for the one client, bound to the nonce, with the true assurance, receipted',
  async (t) => {
    const { app, browser, client, identityId, services } = await setup(t);
    const res = await assert(browser, {
      client_id: client.client_id,
      account_id: identityId,
      is_auto_selected: 'false',
      mode: 'passive',
      fields: 'name,email,picture',
      disclosure_text_shown: 'true',
      disclosure_shown_for: 'name,email,picture',
      params: JSON.stringify({ nonce: 'n-123' }),
    });
    t.equal(res.statusCode, 200, res.body);
    t.equal(res.headers['access-control-allow-origin'], RP);
    t.equal(res.headers['access-control-allow-credentials'], 'true');
    const { token, receipt } = res.json();
    const jwks = createLocalJWKSet((await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json());
    const { payload, protectedHeader } = await jwtVerify(token, jwks, {
      issuer: TEST_ISSUER,
      audience: client.client_id,
      algorithms: ['ES256'],
    });
    t.equal(protectedHeader.alg, 'ES256');
    t.match(payload, {
      sub: identityId,
      aud: client.client_id,
      nonce: 'n-123',
      acr: 'passkey',
      svc: { assurance: 'passkey', principal: { type: 'human', id: identityId } },
      preferred_username: 'alice',
    });
    t.match(receipt, /^[0-9a-f]{64}$/);
    const stored = await services.storage.receipts.get(receipt);
    t.match(JSON.parse(stored!.body), {
      kind: 'signin.in_place',
      client_id: client.client_id,
      transport: 'fedcm',
      identityId,
      assurance: 'passkey',
    });
    t.same(
      (await services.storage.oidc.approval(identityId, client.client_id))?.scopes,
      ['openid', 'email', 'profile'],
      "the browser's disclosure is recorded as the approval",
    );
    const accounts = await browser.get('/fedcm/accounts', WEBIDENTITY);
    t.same(accounts.json().accounts[0].approved_clients, [client.client_id]);

    const replay = await assert(browser, {
      client_id: client.client_id,
      account_id: identityId,
      params: JSON.stringify({ nonce: 'n-123' }),
    });
    t.equal(replay.statusCode, 400);
    t.match(replay.json(), { reason: 'nonce_replayed', error: { code: 'invalid_request' } });

    const topLevel = await assert(browser, { client_id: client.client_id, account_id: identityId, nonce: 'n-top' });
    t.equal(topLevel.statusCode, 200, 'a top-level nonce (older browsers) is read too');
    t.equal((await jwtVerify(topLevel.json().token, jwks)).payload.nonce, 'n-top');
  },
);

t.test(
  'assertion: refusals give the FedCM error, issue nothing, and answer foreign origins without CORS',
  async (t) => {
    const { app, browser, client, other, identityId } = await setup(t);
    const good = {
      client_id: client.client_id,
      account_id: identityId,
      disclosure_text_shown: 'true',
      params: JSON.stringify({ nonce: 'n-1' }),
    };
    const cases: Array<[string, Record<string, string>, Record<string, string | undefined>, number, string]> = [
      ['a foreign Origin', good, { origin: 'https://evil.example.com' }, 403, 'origin_mismatch'],
      ['an origin registered to another client', good, { origin: 'https://other.example.org' }, 403, 'origin_mismatch'],
      ['no Origin', good, { origin: undefined }, 403, 'origin_mismatch'],
      ["the issuer's own origin", good, { origin: TEST_ISSUER }, 403, 'origin_mismatch'],
      ['no Sec-Fetch-Dest', good, { 'sec-fetch-dest': undefined }, 400, 'webidentity_required'],
      ['another account', { ...good, account_id: 'usr_mallory' }, {}, 403, 'account_mismatch'],
      ['no nonce', { ...good, params: '{}' }, {}, 400, 'invalid_request'],
      ['params that are not JSON', { ...good, params: 'nonce=1' }, {}, 400, 'invalid_request'],
      ['params that are a list', { ...good, params: '[1]' }, {}, 400, 'invalid_request'],
      ['a non-string nonce', { ...good, params: '{"nonce":1}' }, {}, 400, 'invalid_request'],
      ['two different nonces', { ...good, nonce: 'n-2' }, {}, 400, 'invalid_request'],
      ['no account_id', { client_id: client.client_id, nonce: 'x' }, {}, 400, 'invalid_request'],
      ['an unknown client', { ...good, client_id: 'cl_nobody' }, {}, 404, 'not_found'],
      ['no disclosure and no approval', { ...good, disclosure_text_shown: 'false' }, {}, 403, 'consent_required'],
    ];
    for (const [name, fields, headers, status, reason] of cases) {
      const res = await assert(browser, fields, headers);
      t.equal(res.statusCode, status, name);
      t.equal(res.json().reason, reason, name);
      t.ok(res.json().error?.code, `${name}: FedCM error member`);
      t.notOk(res.json().token, `${name}: no token`);
      if (reason === 'origin_mismatch' || reason === 'not_found')
        t.equal(res.headers['access-control-allow-origin'], undefined, `${name}: no CORS`);
    }
    const repeated = await browser.request('POST', '/fedcm/assertion', `${form(good)}&client_id=${client.client_id}`, {
      ...WEBIDENTITY,
      origin: RP,
      'content-type': 'application/x-www-form-urlencoded',
    });
    t.equal(repeated.json().reason, 'invalid_request', 'a repeated client_id is refused');

    const anonymous = await app.inject({
      method: 'POST',
      url: '/fedcm/assertion',
      payload: form(good),
      headers: { ...WEBIDENTITY, origin: RP, 'content-type': 'application/x-www-form-urlencoded' },
    });
    t.equal(anonymous.statusCode, 401);

    const plain = await registerClient(app, { redirect_uris: ['https://plain.example.net/cb'] });
    const off = await assert(browser, { ...good, client_id: plain.client_id }, { origin: 'https://plain.example.net' });
    t.equal(off.statusCode, 403);
    t.equal(off.json().reason, 'in_place_disabled');
    t.equal(other.client_id.length > 0, true);
  },
);

t.test('disconnect forgets the approval and leaves a receipt', async (t) => {
  const { browser, client, identityId, services } = await setup(t);
  await services.storage.oidc.recordApproval(identityId, client.client_id, { scopes: ['openid'], resources: [] }, 1);
  const headers = { ...WEBIDENTITY, origin: RP, 'content-type': 'application/x-www-form-urlencoded' };
  const foreign = await browser.request(
    'POST',
    '/fedcm/disconnect',
    form({ client_id: client.client_id, account_hint: identityId }),
    { ...headers, origin: 'https://evil.example.com' },
  );
  t.equal(foreign.statusCode, 403);
  const res = await browser.request(
    'POST',
    '/fedcm/disconnect',
    form({ client_id: client.client_id, account_hint: identityId }),
    headers,
  );
  t.equal(res.statusCode, 200);
  t.match(res.json(), { account_id: identityId, receipt: /^[0-9a-f]{64}$/ });
  t.equal(res.headers['access-control-allow-origin'], RP);
  t.match(JSON.parse((await services.storage.receipts.get(res.json().receipt))!.body), {
    kind: 'fedcm.disconnected',
    client_id: client.client_id,
    identityId,
  });
  t.equal(await services.storage.oidc.approval(identityId, client.client_id), null);
  const anonymous = await services.storage.oidc.approvedClients(identityId);
  t.same(anonymous, []);
});

t.test('a disabled account is offered to no client and gets no assertion', async (t) => {
  const { app, browser, client, identityId, services } = await setup(t);
  const good = {
    client_id: client.client_id,
    account_id: identityId,
    disclosure_text_shown: 'true',
    params: JSON.stringify({ nonce: 'n-off' }),
  };
  // A session that outlived the pause (the admin API ends them all; this proves the check itself).
  await services.storage.identities.setState(identityId, 'disabled', services.now());
  const accounts = await browser.get('/fedcm/accounts', WEBIDENTITY);
  t.equal(accounts.statusCode, 403);
  t.match(accounts.json(), { reason: 'account_disabled', error: { code: 'access_denied' } });
  const refused = await assert(browser, good);
  t.equal(refused.statusCode, 403);
  t.match(refused.json(), { reason: 'account_disabled', error: { code: 'access_denied' } });
  t.notOk(refused.json().token, 'no token');
  t.equal(await services.storage.oidc.approval(identityId, client.client_id), null, 'no approval recorded');

  await services.storage.identities.setState(identityId, 'active', services.now());
  t.equal((await assert(browser, good)).statusCode, 200, 'active again, the same session gets its token');
  await app.inject({
    method: 'POST',
    url: `/admin/accounts/${identityId}/disable`,
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  t.equal(
    (await browser.get('/fedcm/accounts', WEBIDENTITY)).statusCode,
    401,
    'disabled by the operator, the session is gone',
  );
  t.equal((await assert(browser, { ...good, params: JSON.stringify({ nonce: 'n-off-2' }) })).statusCode, 401);
});

t.test('an account its org suspended is offered to no client and refused account_suspended', async (t) => {
  const { browser, client, identityId, services } = await setup(t);
  // A session that outlived the suspension (SCIM ends them all; this proves the check itself).
  await services.storage.identities.setSuspended(identityId, services.now());
  const accounts = await browser.get('/fedcm/accounts', WEBIDENTITY);
  t.equal(accounts.statusCode, 403);
  t.match(accounts.json(), { reason: 'account_suspended', error: { code: 'access_denied' } });
  const refused = await assert(browser, {
    client_id: client.client_id,
    account_id: identityId,
    disclosure_text_shown: 'true',
    params: JSON.stringify({ nonce: 'n-suspended' }),
  });
  t.equal(refused.statusCode, 403);
  t.match(refused.json(), { reason: 'account_suspended', error: { code: 'access_denied' } });
  t.notOk(refused.json().token, 'no token');
});

t.test("a client's access.orgs: a non-member gets access_denied and no token, a member gets one", async (t) => {
  const { browser, client, identityId, services } = await setup(t, { access: { orgs: [{ slug: 'acme' }] } });
  const ask = (nonce: string) =>
    assert(browser, {
      client_id: client.client_id,
      account_id: identityId,
      disclosure_text_shown: 'true',
      params: JSON.stringify({ nonce }),
    });
  const refused = await ask('n-org-1');
  t.equal(refused.statusCode, 403);
  t.match(refused.json(), { reason: 'access_denied', error: { code: 'access_denied' } });
  t.notOk(refused.json().token, 'no token');
  await createOrg(services, identityId, { name: 'Acme' });
  t.equal((await ask('n-org-2')).statusCode, 200, 'a member of acme gets the token');
});

t.test('a client that got a FedCM ID token is told by back-channel logout when the session ends', async (t) => {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN, 'fetch.allowPrivateTargets': true } });
  const client = await registerClient(built.app, {
    in_place: true,
    backchannel_logout_uri: 'https://localhost:1/backchannel-logout',
  });
  const { browser, identityId } = await built.signIn({ username: 'alice' });
  const res = await assert(browser, {
    client_id: client.client_id,
    account_id: identityId,
    disclosure_text_shown: 'true',
    params: JSON.stringify({ nonce: 'n-bcl' }),
  });
  t.equal(res.statusCode, 200, res.body);
  const sid = String(decodeJwt(res.json().token).sid);
  t.same(await built.services.storage.logouts.listForSession(sid), [], 'nothing while the session lives');
  t.equal((await browser.post('/auth/signout')).statusCode, 200);
  t.match(await built.services.storage.logouts.listForSession(sid), [
    { clientId: client.client_id, identityId, sessionId: sid },
  ]);
});

t.test('FedCM errors are shaped by the one error handler, not by re-reading answers', async (t) => {
  // The route marks its paths (config.errorMembers); no hook parses an envelope back out of a payload.
  const source = readFileSync('control-plane/src/routes/fedcm/index.ts', 'utf8');
  t.notMatch(source, /onSend|JSON\.parse/);
  t.match(source, /errorMembers/);
});
