import t from 'tap';
import {
  buildRedirect,
  checkAuthorizationRequest,
  coversRequest,
  decideAuthorization,
  grantableScopes,
  mergeApproval,
  readClientId,
  type AuthorizationRequest,
} from '#lib/oauth/authorization-request.js';

const client = {
  clientId: 'cl_1',
  redirectUris: ['https://app.example.com/cb'],
  scope: 'openid email offline_access',
  grantTypes: ['authorization_code', 'refresh_token'],
  resources: ['https://api.example.com'],
  allowsHumans: true,
};
const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
const good = {
  client_id: 'cl_1',
  redirect_uri: 'https://app.example.com/cb',
  response_type: 'code',
  code_challenge: challenge,
  code_challenge_method: 'S256',
  scope: 'openid email',
  state: 's',
};

t.test('accepts a good request and reads every parameter', async (t) => {
  const check = checkAuthorizationRequest(
    {
      ...good,
      nonce: 'n',
      resource: 'https://api.example.com',
      prompt: 'login consent',
      max_age: '30',
      acr_values: 'sensitive passkey bogus',
      response_mode: 'web_message',
    },
    client,
  );
  t.ok(check.ok);
  if (!check.ok) return;
  t.match(check.request, {
    clientId: 'cl_1',
    responseMode: 'web_message',
    scopes: ['openid', 'email'],
    resource: 'https://api.example.com',
    prompt: ['login', 'consent'],
    maxAge: 30,
    acr: 'passkey',
    nonce: 'n',
    state: 's',
  });
});

t.test('never offers a redirect target before the redirect URI matched exactly', async (t) => {
  const check = checkAuthorizationRequest(
    { ...good, redirect_uri: 'https://app.example.com/cb/', response_type: 'token' },
    client,
  );
  t.same(check.ok, false);
  t.equal((check as { target: unknown }).target, null);
  t.equal(readClientId({ client_id: ['a', 'b'] }), null);
});

t.test('refuses human sign-in for an agents-only client', async (t) => {
  const check = checkAuthorizationRequest(good, { ...client, allowsHumans: false });
  t.match(check, { ok: false, error: 'unauthorized_client' });
});

const base: AuthorizationRequest = {
  clientId: 'cl_1',
  redirectUri: 'https://app.example.com/cb',
  responseMode: 'query',
  scopes: ['openid'],
  codeChallenge: challenge,
  prompt: [],
};
const session = { identityId: 'usr_1', assurance: 'passkey' as const, authTime: 1_000_000 };

t.test('decides: sign in, step up, approve, or issue', async (t) => {
  t.same(decideAuthorization({ request: base, session: undefined, now: 2_000_000, approval: null }), {
    action: 'login',
  });
  t.match(
    decideAuthorization({ request: { ...base, prompt: ['none'] }, session: undefined, now: 2_000_000, approval: null }),
    { action: 'refuse', error: 'login_required' },
  );
  t.same(decideAuthorization({ request: base, session, now: 2_000_000, approval: null }), { action: 'consent' });
  t.same(
    decideAuthorization({
      request: base,
      session,
      now: 2_000_000,
      approval: { scopes: ['openid', 'email'], resources: [] },
    }),
    { action: 'issue', approval: 'remembered' },
  );
  t.same(
    decideAuthorization({
      request: { ...base, prompt: ['consent'] },
      session,
      now: 2_000_000,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'consent' },
  );
  t.match(
    decideAuthorization({ request: { ...base, prompt: ['none'] }, session, now: 2_000_000, approval: null }),
    { action: 'refuse', error: 'consent_required' },
    'OIDC Core §3.1.2.6: prompt=none never issues without an approval',
  );
  t.same(
    decideAuthorization({
      request: { ...base, prompt: ['none'] },
      session,
      now: 2_000_000,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'issue', approval: 'prompt_none' },
  );
  t.same(decideAuthorization({ request: { ...base, acr: 'sensitive' }, session, now: 2_000_000, approval: null }), {
    action: 'step_up',
  });
  t.match(
    decideAuthorization({
      request: { ...base, acr: 'sensitive', prompt: ['none'] },
      session,
      now: 2_000_000,
      approval: null,
    }),
    { action: 'refuse', error: 'interaction_required' },
  );
  t.same(
    decideAuthorization({
      request: { ...base, maxAge: 10 },
      session,
      now: 1_000_000 + 11_000,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'login' },
  );
  t.same(
    decideAuthorization({
      request: { ...base, maxAge: 10 },
      session,
      now: 1_000_000 + 9_000,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'issue', approval: 'remembered' },
  );
  t.same(
    decideAuthorization({
      request: { ...base, prompt: ['login'] },
      session,
      now: 2_000_000,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'login' },
  );
  t.same(
    decideAuthorization({
      request: { ...base, prompt: ['login'] },
      session,
      now: 2_000_000,
      loginAfter: 900_000,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'issue', approval: 'remembered' },
  );
  t.same(
    decideAuthorization({
      request: { ...base, maxAge: 0 },
      session,
      now: 1_000_001,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'login' },
  );
  t.same(
    decideAuthorization({
      request: { ...base, maxAge: 0 },
      session,
      now: 1_000_001,
      loginAfter: 1_000_000,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'issue', approval: 'remembered' },
    'max_age=0 is met by the sign-in it asked for',
  );
  t.same(
    decideAuthorization({
      request: { ...base, maxAge: 0, acr: 'sensitive' },
      session,
      now: 1_000_001,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'step_up' },
    'max_age=0 with a higher acr: one step-up is the fresh authentication',
  );
  t.same(
    decideAuthorization({
      request: { ...base, maxAge: 0, acr: 'passkey' },
      session,
      now: 1_000_001,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'login' },
    'acr already met: a plain fresh sign-in',
  );
  t.match(
    decideAuthorization({
      request: { ...base, maxAge: 0, acr: 'sensitive', prompt: ['none'] },
      session,
      now: 1_000_001,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'refuse', error: 'login_required' },
  );
});

t.test('an approval covers a request only with every scope and the resource it names', async (t) => {
  const approval = { scopes: ['openid', 'email'], resources: ['https://api.example.com'] };
  t.ok(coversRequest(approval, { scopes: ['openid'] }));
  t.ok(coversRequest(approval, { scopes: ['openid'], resource: 'https://api.example.com' }));
  t.notOk(
    coversRequest(approval, { scopes: ['openid'], resource: 'https://gw.example.com' }),
    'a resource never approved',
  );
  t.notOk(coversRequest(approval, { scopes: ['openid', 'profile'] }), 'a scope never approved');
  t.notOk(coversRequest(null, { scopes: [] }));
  const withResource = { ...base, resource: 'https://gw.example.com' };
  t.match(
    decideAuthorization({
      request: { ...withResource, prompt: ['none'] },
      session,
      now: 2_000_000,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'refuse', error: 'consent_required' },
  );
  t.same(
    decideAuthorization({
      request: withResource,
      session,
      now: 2_000_000,
      approval: { scopes: ['openid'], resources: [] },
    }),
    { action: 'consent' },
  );
  t.same(mergeApproval(approval, { scopes: ['profile', 'openid'], resource: 'https://gw.example.com' }), {
    scopes: ['openid', 'email', 'profile'],
    resources: ['https://api.example.com', 'https://gw.example.com'],
  });
  t.same(mergeApproval(null, { scopes: ['openid'] }), { scopes: ['openid'], resources: [] });
});

t.test('a first-party client skips the approval page, but not a sign-in, a step-up or prompt=consent', async (t) => {
  t.same(decideAuthorization({ request: base, session, now: 2_000_000, approval: null, firstParty: true }), {
    action: 'issue',
    approval: 'first_party',
  });
  t.same(
    decideAuthorization({
      request: { ...base, prompt: ['none'] },
      session,
      now: 2_000_000,
      approval: null,
      firstParty: true,
    }),
    { action: 'issue', approval: 'first_party' },
  );
  t.same(
    decideAuthorization({
      request: { ...base, prompt: ['consent'] },
      session,
      now: 2_000_000,
      approval: null,
      firstParty: true,
    }),
    { action: 'consent' },
  );
  t.same(decideAuthorization({ request: base, session: undefined, now: 2_000_000, approval: null, firstParty: true }), {
    action: 'login',
  });
  t.same(
    decideAuthorization({
      request: { ...base, acr: 'sensitive' },
      session,
      now: 2_000_000,
      approval: null,
      firstParty: true,
    }),
    { action: 'step_up' },
  );
});

t.test('buildRedirect keeps the registered query and appends parameters', async (t) => {
  t.equal(
    buildRedirect('https://app.example.com/cb?tenant=a', { code: 'c d', state: 's' }),
    'https://app.example.com/cb?tenant=a&code=c+d&state=s',
  );
});

t.test('refuses each bad parameter with its RFC 6749 code, sent back to the verified redirect URI', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string, typeof client?]> = [
    ['a repeated parameter', { scope: ['openid', 'openid email'] }, 'invalid_request'],
    ['an unknown response_mode', { response_mode: 'fragment' }, 'invalid_request'],
    ['an overlong state', { state: 's'.repeat(2049) }, 'invalid_request'],
    ['a request object not resolved first', { request: 'eyJ.e30.' }, 'invalid_request'],
    ['a request_uri not resolved first', { request_uri: 'urn:x' }, 'invalid_request'],
    ['the registration parameter (OIDC Core §7.2.1)', { registration: '{}' }, 'registration_not_supported'],
    ['no response_type', { response_type: undefined }, 'invalid_request'],
    ['the implicit flow', { response_type: 'token' }, 'unsupported_response_type'],
    ['the hybrid flow', { response_type: 'code id_token' }, 'unsupported_response_type'],
    ['no code_challenge', { code_challenge: undefined }, 'invalid_request'],
    ['no code_challenge_method', { code_challenge_method: undefined }, 'invalid_request'],
    ['the plain PKCE method', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['a challenge that is no S256 digest', { code_challenge: 'short' }, 'invalid_request'],
    ['a malformed scope', { scope: 'openid  email' }, 'invalid_scope'],
    ['an unregistered resource', { resource: 'https://other.example.com' }, 'invalid_target'],
    ['an unknown prompt', { prompt: 'choose' }, 'invalid_request'],
    ['prompt=none with select_account', { prompt: 'none select_account' }, 'invalid_request'],
    ['an empty id_token_hint', { id_token_hint: '' }, 'invalid_request'],
    ['prompt=none with another value', { prompt: 'none login' }, 'invalid_request'],
    ['a negative max_age', { max_age: '-1' }, 'invalid_request'],
    ['a non-numeric max_age', { max_age: '1e3' }, 'invalid_request'],
    ['overlong acr_values', { acr_values: 'passkey '.repeat(100) }, 'invalid_request'],
    ['a dpop_jkt that is no thumbprint', { dpop_jkt: 'abc' }, 'invalid_request'],
    ['an empty nonce', { nonce: '' }, 'invalid_request'],
    ['an overlong nonce', { nonce: 'n'.repeat(513) }, 'invalid_request'],
  ];
  for (const [name, change, error, forClient] of cases) {
    const check = checkAuthorizationRequest({ ...good, ...change }, forClient ?? client);
    t.match(
      check,
      { ok: false, error, target: { redirectUri: 'https://app.example.com/cb', responseMode: 'query' } },
      name,
    );
  }
  t.match(
    checkAuthorizationRequest({ ...good, prompt: 'none' }, client),
    { ok: true },
    'the good request with one change still passes',
  );
  t.match(
    checkAuthorizationRequest({ ...good, scope: 'openid  bogus' }, client),
    { ok: false, target: { state: 's' } },
    'state rides along on the error',
  );
  t.match(checkAuthorizationRequest({ ...good, response_mode: 'web_message', scope: 'openid  bogus' }, client), {
    ok: false,
    target: { responseMode: 'web_message' },
  });
  t.notOk(
    'state' in (checkAuthorizationRequest({ ...good, state: 's'.repeat(2049) }, client) as { target: object }).target,
    'an overlong state is not echoed',
  );
  t.match(
    checkAuthorizationRequest({ ...good, redirect_uri: undefined }, client),
    { ok: false, target: null },
    'no redirect_uri: an error page',
  );
});

t.test('grants the known, registered scopes and ignores the rest (OIDC Core §3.1.2.1)', async (t) => {
  const granted = (scope: string, forClient = client) => {
    const check = checkAuthorizationRequest({ ...good, scope }, forClient);
    return check.ok ? check.request.scopes : check;
  };
  t.same(granted('openid admin email'), ['openid', 'email'], 'a scope the provider does not know is dropped');
  t.same(granted('openid profile'), ['openid'], 'a scope the client did not register is dropped');
  t.same(
    granted('openid offline_access', { ...client, grantTypes: ['authorization_code'] }),
    ['openid'],
    'offline_access without the refresh grant is dropped (Core §11)',
  );
  t.same(granted('custom'), [], 'nothing known: a plain OAuth request without an ID token');
  t.same(grantableScopes(['email', 'openid', 'x'], client), ['email', 'openid']);
});

t.test('accepts form_post and select_account, and reads id_token_hint', async (t) => {
  const check = checkAuthorizationRequest(
    { ...good, response_mode: 'form_post', prompt: 'select_account consent', id_token_hint: 'a.b.c' },
    client,
  );
  t.match(check, {
    ok: true,
    request: { responseMode: 'form_post', prompt: ['select_account', 'consent'], idTokenHint: 'a.b.c' },
  });
  const refused = checkAuthorizationRequest({ ...good, response_mode: 'form_post', response_type: 'token' }, client);
  t.match(refused, { ok: false, target: { responseMode: 'form_post' } }, 'errors go back by form_post too');
});

t.test('a registered default_max_age and default_acr_values apply when the request has none', async (t) => {
  const withDefaults = { ...client, defaultMaxAge: 60, defaultAcrValues: ['sensitive'] };
  t.match(checkAuthorizationRequest(good, withDefaults), { ok: true, request: { maxAge: 60, acr: 'sensitive' } });
  t.match(checkAuthorizationRequest({ ...good, max_age: '5', acr_values: 'passkey' }, withDefaults), {
    ok: true,
    request: { maxAge: 5, acr: 'passkey' },
  });
});

t.test('id_token_hint naming another account: login_required under prompt=none, else sign-in', async (t) => {
  const input = { now: 2_000_000, approval: { scopes: ['openid'], resources: [] }, hintSubject: 'usr_other' };
  t.match(decideAuthorization({ ...input, request: { ...base, prompt: ['none'] }, session }), {
    action: 'refuse',
    error: 'login_required',
  });
  t.same(decideAuthorization({ ...input, request: base, session }), { action: 'login' });
  t.same(
    decideAuthorization({ ...input, request: base, session, loginAfter: 500_000 }),
    { action: 'issue', approval: 'remembered' },
    'whoever signs in for this request is the answer',
  );
  t.same(
    decideAuthorization({ ...input, hintSubject: 'usr_1', request: { ...base, prompt: ['none'] }, session }),
    { action: 'issue', approval: 'prompt_none' },
    'the hinted account is the signed-in one',
  );
});

t.test('prompt=select_account offers the choice once, then continues', async (t) => {
  const input = { now: 2_000_000, approval: { scopes: ['openid'], resources: [] } };
  const request = { ...base, prompt: ['select_account' as const] };
  t.same(decideAuthorization({ ...input, request, session }), { action: 'select_account' });
  t.same(decideAuthorization({ ...input, request, session: undefined }), { action: 'login' });
  t.same(decideAuthorization({ ...input, request, session, accountChosen: true }), {
    action: 'issue',
    approval: 'remembered',
  });
  t.same(decideAuthorization({ ...input, request, session, loginAfter: 500_000 }), {
    action: 'issue',
    approval: 'remembered',
  });
});
