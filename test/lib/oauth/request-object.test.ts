import t from 'tap';
import { SignJWT, UnsecuredJWT, createLocalJWKSet, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { mergeRequestObject, verifyRequestObject } from '#lib/oauth/request-object.js';

const ISSUER = 'https://id.example.com';
const CLIENT = 'cl_1';
const NOW = Date.parse('2026-11-26T12:00:00Z');
const iat = Math.floor(NOW / 1000);

const { publicKey, privateKey } = await generateKeyPair('ES256');
const other = await generateKeyPair('ES256');
const keys = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] });

function sign(claims: Record<string, unknown>, key: CryptoKey = privateKey as CryptoKey, alg = 'ES256') {
  return new SignJWT(claims).setProtectedHeader({ alg, kid: 'k1', typ: 'oauth-authz-req+jwt' }).sign(key);
}

const good = {
  iss: CLIENT,
  aud: ISSUER,
  iat,
  exp: iat + 300,
  client_id: CLIENT,
  response_type: 'code',
  redirect_uri: 'https://app.example.com/cb',
  scope: 'openid email',
  state: 's',
  max_age: 60,
  resource: ['https://api.example.com'],
  claims: { userinfo: { email: null } },
};
const input = { clientId: CLIENT, issuer: ISSUER, now: NOW, keys };

t.test('a good request object yields its parameters, JWT claims stripped', async (t) => {
  const check = await verifyRequestObject(await sign(good), input);
  t.same(check, {
    ok: true,
    params: {
      client_id: CLIENT,
      response_type: 'code',
      redirect_uri: 'https://app.example.com/cb',
      scope: 'openid email',
      state: 's',
      max_age: '60',
      resource: 'https://api.example.com',
    },
  });
});

t.test('refuses what is not a request object this client signed for this server', async (t) => {
  type Extra = Partial<typeof input> & { signingAlg?: string };
  const cases: Array<[string, Promise<string> | string, Extra?]> = [
    ['unsigned (alg none)', new UnsecuredJWT(good).encode()],
    ['encrypted (five parts)', 'a.b.c.d.e'],
    ['not a JWS', 'not-a-jwt'],
    ['signed by another key', sign(good, other.privateKey as CryptoKey)],
    ['another issuer (iss)', sign({ ...good, iss: 'cl_2' })],
    ['no iss', sign({ ...good, iss: undefined })],
    ['for another server (aud)', sign({ ...good, aud: 'https://other.example.com' })],
    ['expired', sign({ ...good, exp: iat - 10 })],
    ['no exp', sign({ ...good, exp: undefined })],
    ['living longer than an hour', sign({ ...good, exp: iat + 7200 })],
    ['nesting request', sign({ ...good, request: 'x' })],
    ['nesting request_uri', sign({ ...good, request_uri: 'https://x' })],
    ['client_id of another client', sign({ ...good, client_id: 'cl_2' })],
    ['an algorithm other than the registered one', sign(good), { signingAlg: 'PS256' }],
    ['too large', 'a'.repeat(40_000)],
  ];
  for (const [name, jwt, extra] of cases) {
    const check = await verifyRequestObject(await jwt, { ...input, ...extra });
    t.match(check, { ok: false, error: 'invalid_request_object' }, name);
  }
});

t.test('merging: the request object wins; client_id and response_type must agree (OIDC Core §6.1)', async (t) => {
  t.same(
    mergeRequestObject(
      { client_id: CLIENT, response_type: 'code', scope: 'openid', state: 'outer', request: 'jwt', nonce: 'n' },
      { scope: 'openid email', state: 'inner' },
    ),
    {
      ok: true,
      params: { client_id: CLIENT, response_type: 'code', scope: 'openid email', state: 'inner', nonce: 'n' },
    },
  );
  t.match(mergeRequestObject({ client_id: CLIENT }, { client_id: 'cl_2' }), {
    ok: false,
    error: 'invalid_request_object',
  });
  t.match(mergeRequestObject({ response_type: 'code' }, { response_type: 'token' }), {
    ok: false,
    error: 'invalid_request_object',
  });
});
