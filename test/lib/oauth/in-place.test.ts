import t from 'tap';
import { coversRequest } from '#lib/oauth/authorization-request.js';
import {
  publishableOrigins,
  buildCorsHeaders,
  buildPopupUrl,
  decideInPlaceConsent,
  isRegisteredOrigin,
  registeredOriginsOf,
} from '#lib/oauth/in-place.js';

const client = { redirect_uris: ['https://rp.example/cb', 'https://rp.example/other', 'http://127.0.0.1:8080/cb'] };

t.test("a client's registered origins are the origins of its redirect URIs, matched exactly", async (t) => {
  t.same(registeredOriginsOf(client), ['https://rp.example', 'http://127.0.0.1:8080']);
  t.ok(isRegisteredOrigin(client, 'https://rp.example'));
  t.ok(isRegisteredOrigin(client, 'http://127.0.0.1:8080'));
  for (const origin of [
    undefined,
    'null',
    'https://rp.example:443x',
    'https://RP.example',
    'https://rp.example/',
    'http://rp.example',
    'https://evil.rp.example',
    'http://127.0.0.1:8081',
  ]) {
    t.notOk(isRegisteredOrigin(client, origin), `refuses ${origin}`);
  }
});

t.test('CORS names the exact origin with credentials for a registered origin, and nothing for others', async (t) => {
  t.same(buildCorsHeaders('https://rp.example', true), {
    vary: 'Origin',
    'access-control-allow-origin': 'https://rp.example',
    'access-control-allow-credentials': 'true',
  });
  t.same(buildCorsHeaders('https://evil.example', false, { methods: 'POST', headers: 'Content-Type' }), {
    vary: 'Origin',
  });
  t.same(buildCorsHeaders(undefined, true), { vary: 'Origin' });
  t.match(buildCorsHeaders('https://rp.example', true, { methods: 'POST', headers: 'Content-Type' }), {
    'access-control-allow-methods': 'POST',
    'access-control-allow-headers': 'Content-Type',
    'access-control-max-age': '600',
  });
});

t.test("one consent rule for every transport, the same as /auth/authorize's", async (t) => {
  const base = { request: { scopes: ['openid', 'email'] }, approval: null, firstParty: false };
  const approved = { scopes: ['openid', 'email', 'profile'], resources: ['https://api.example.com'] };
  for (const transport of ['redirect', 'popup', 'fedcm', 'direct'] as const) {
    t.same(
      decideInPlaceConsent({ ...base, transport, firstParty: true }),
      { allowed: true, recordApproval: false },
      `${transport}: first party`,
    );
    t.same(
      decideInPlaceConsent({ ...base, transport, approval: approved }),
      { allowed: true, recordApproval: false },
      `${transport}: approved before`,
    );
    const withResource = { scopes: ['openid'], resource: 'https://api.example.com' };
    t.same(
      decideInPlaceConsent({ ...base, transport, request: withResource, approval: approved }),
      { allowed: true, recordApproval: false },
      `${transport}: approved resource`,
    );
    const other = { scopes: ['openid'], resource: 'https://other.example.com' };
    t.equal(
      decideInPlaceConsent({ ...base, transport, request: other, approval: approved }).allowed,
      false,
      `${transport}: a resource never approved is not covered`,
    );
    t.equal(
      decideInPlaceConsent({ ...base, transport, request: other, approval: approved }).allowed,
      coversRequest(approved, other),
      `${transport}: the same rule as coversRequest`,
    );
  }
  t.same(
    decideInPlaceConsent({
      ...base,
      transport: 'direct',
      request: { scopes: ['openid'], resource: 'https://api.example.com' },
      approval: { scopes: ['openid'], resources: [] },
    }),
    { allowed: false, next: 'refuse' },
    'an approval of the scope without the resource does not cover a direct grant for it',
  );
  t.same(decideInPlaceConsent({ ...base, transport: 'popup' }), { allowed: false, next: 'consent_page' });
  t.same(
    decideInPlaceConsent({ ...base, transport: 'redirect', approval: { scopes: ['openid'], resources: [] } }),
    { allowed: false, next: 'consent_page' },
    'a narrower approval asks again',
  );
  t.same(
    decideInPlaceConsent({ ...base, transport: 'fedcm', disclosureShown: true }),
    { allowed: true, recordApproval: true },
    "the browser's disclosure counts and is recorded",
  );
  t.same(decideInPlaceConsent({ ...base, transport: 'fedcm' }), { allowed: false, next: 'refuse' });
  t.same(decideInPlaceConsent({ ...base, transport: 'direct' }), { allowed: false, next: 'refuse' });
});

t.test('the popup URL repeats the request with response_mode=web_message', async (t) => {
  const url = new URL(
    buildPopupUrl('https://id.example', {
      clientId: 'cl_1',
      redirectUri: 'https://rp.example/cb',
      codeChallenge: 'c'.repeat(43),
      state: 's',
      scope: 'openid',
    }),
  );
  t.equal(url.origin + url.pathname, 'https://id.example/auth/authorize');
  t.same(Object.fromEntries(url.searchParams), {
    client_id: 'cl_1',
    redirect_uri: 'https://rp.example/cb',
    response_type: 'code',
    response_mode: 'web_message',
    scope: 'openid',
    code_challenge: 'c'.repeat(43),
    code_challenge_method: 'S256',
    state: 's',
  });
});

t.test(
  "publishable origins: the operator's or first-party clients all; an account's only under a proved domain",
  async (t) => {
    const uris = [
      'https://app.example.com/cb',
      'https://login.app.example.com/cb',
      'https://app.example.org/cb',
      'http://app.example.com/cb',
    ];
    const client = { redirect_uris: uris, in_place: true };
    const all = [
      'https://app.example.com',
      'https://login.app.example.com',
      'https://app.example.org',
      'http://app.example.com',
    ];
    t.same(publishableOrigins(client, { operatorRegistered: true, provedDomains: [] }), all);
    t.same(publishableOrigins({ ...client, first_party: true }, { operatorRegistered: false, provedDomains: [] }), all);
    t.same(publishableOrigins(client, { operatorRegistered: false, provedDomains: [] }), []);
    t.same(
      publishableOrigins(client, { operatorRegistered: false, provedDomains: ['app.example.com'] }),
      ['https://app.example.com', 'https://login.app.example.com'],
      'the domain and names under it, https only',
    );
    t.same(publishableOrigins(client, { operatorRegistered: false, provedDomains: ['example.com.evil'] }), []);
    t.same(
      publishableOrigins(client, { operatorRegistered: false, provedDomains: ['pp.example.com'] }),
      [],
      'a suffix is not a parent domain',
    );
    t.same(publishableOrigins({ ...client, in_place: false }, { operatorRegistered: true, provedDomains: [] }), []);
  },
);
