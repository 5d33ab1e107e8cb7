import t from 'tap';
import { createLocalJWKSet, exportJWK, importJWK, jwtVerify } from 'jose';
import { buildAccessTokenClaims, buildIdTokenClaims, capAssurance, type IdTokenInput } from '#lib/tokens/claims.js';
import { signAccessToken, signIdToken } from '#lib/tokens/sign-token.js';
import { generateKeyPairSync, type webcrypto } from 'node:crypto';

const ISSUER = 'https://id.example.com';
const NOW = Date.parse('2026-11-22T12:00:00Z');
const SUB = 'idn_abc';

const base: IdTokenInput = {
  issuer: ISSUER,
  subject: SUB,
  clientId: 'cl_1',
  now: NOW,
  lifetimeSeconds: 600,
  authTime: NOW - 30_000,
  provedAssurance: 'passkey',
  amr: ['hwk', 'user'],
  principal: { type: 'human', id: SUB },
  scopes: ['openid'],
};

t.test('builds ID-token claims with aud = client_id and truthful svc', async (t) => {
  const claims = buildIdTokenClaims({ ...base, nonce: 'n-1', sid: 'ses_1' });
  t.same(claims, {
    iss: ISSUER,
    sub: SUB,
    aud: 'cl_1',
    exp: NOW / 1000 + 600,
    iat: NOW / 1000,
    auth_time: NOW / 1000 - 30,
    acr: 'passkey',
    amr: ['hwk', 'user'],
    svc: { assurance: 'passkey', principal: { type: 'human', id: SUB } },
    nonce: 'n-1',
    sid: 'ses_1',
  });
});

t.test('states email only with scope email, and email_verified exactly boolean', async (t) => {
  const email = { address: 'ada@example.com', verified: true };
  t.notOk('email' in buildIdTokenClaims({ ...base, email }), 'no scope email, no email');
  t.match(buildIdTokenClaims({ ...base, scopes: ['openid', 'email'], email }), {
    email: 'ada@example.com',
    email_verified: true,
  });
  const unverified = buildIdTokenClaims({
    ...base,
    scopes: ['openid', 'email'],
    email: { address: 'a@example.com', verified: 'true' as unknown as boolean },
  });
  t.equal(unverified.email_verified, false, 'anything but true is false');
  t.notOk('email_verified' in buildIdTokenClaims({ ...base, scopes: ['openid', 'email'] }), 'no address, no claim');
  t.notOk('name' in buildIdTokenClaims({ ...base, profile: { name: 'Ada' } }), 'no scope profile, no profile claims');
  t.match(
    buildIdTokenClaims({ ...base, scopes: ['openid', 'profile'], profile: { name: 'Ada', preferred_username: 'ada' } }),
    { name: 'Ada', preferred_username: 'ada' },
  );
  const orgs = [{ slug: 'acme', role: 'admin' as const }];
  t.notOk('orgs' in buildIdTokenClaims({ ...base, orgs }), 'no scope orgs, no orgs claim');
  t.same(buildIdTokenClaims({ ...base, scopes: ['openid', 'orgs'], orgs }).orgs, orgs);
  t.same(buildIdTokenClaims({ ...base, scopes: ['openid', 'orgs'], orgs: [] }).orgs, [], 'in no org: an empty list');
});

t.test('never reports more assurance than was proved', async (t) => {
  t.equal(buildIdTokenClaims({ ...base, provedAssurance: 'recovery', reportedAssurance: 'sensitive' }).acr, 'recovery');
  t.equal(
    buildIdTokenClaims({ ...base, provedAssurance: 'sensitive', reportedAssurance: 'passkey' }).svc.assurance,
    'passkey',
  );
  t.equal(capAssurance('email', 'passkey'), 'email');
  t.equal(capAssurance('sensitive'), 'sensitive');
  t.throws(() => capAssurance('root' as never));
  t.throws(() => capAssurance('passkey', 'root' as never));
});

t.test('states an agent principal with its owner and kind', async (t) => {
  const claims = buildIdTokenClaims({
    ...base,
    subject: 'agt_x1',
    principal: { type: 'agent', id: 'agt_x1', owner: SUB, kind: 'ci-runner' },
  });
  t.same(claims.svc.principal, { type: 'agent', id: 'agt_x1', owner: SUB, kind: 'ci-runner' });
  t.throws(
    () => buildIdTokenClaims({ ...base, principal: { type: 'human', id: 'someone-else' } }),
    'a human principal is the subject',
  );
  t.throws(() =>
    buildIdTokenClaims({
      ...base,
      principal: { type: 'agent', id: 'bot_1' as `agt_${string}`, owner: SUB, kind: 'x' },
    }),
  );
  t.throws(() => buildIdTokenClaims({ ...base, principal: { type: 'agent', id: 'agt_1', owner: '', kind: 'x' } }));
  t.throws(() => buildIdTokenClaims({ ...base, lifetimeSeconds: 0 }));
});

t.test('builds RFC 9068 access-token claims', async (t) => {
  const claims = buildAccessTokenClaims({ ...base, scopes: ['openid', 'email', 'openid'], jti: 'at_1' });
  t.match(claims, { aud: 'cl_1', client_id: 'cl_1', scope: 'openid email', jti: 'at_1', acr: 'passkey' });
  t.notOk('cnf' in claims);
  const bound = buildAccessTokenClaims({
    ...base,
    scopes: ['openid'],
    jti: 'at_2',
    resource: 'https://api.example.com',
    dpopJkt: 'thumb',
  });
  t.equal(bound.aud, 'https://api.example.com', 'aud is the resource');
  t.same(bound.cnf, { jkt: 'thumb' });
});

t.test('signed tokens verify with jose against the JWKS', async (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwks = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] });
  const key = { kid: 'k1', privateKey };
  const idToken = await signIdToken(buildIdTokenClaims({ ...base, nonce: 'n-1' }), key);
  const id = await jwtVerify(idToken, jwks, {
    issuer: ISSUER,
    audience: 'cl_1',
    algorithms: ['ES256'],
    currentDate: new Date(NOW),
  });
  t.equal(id.protectedHeader.kid, 'k1');
  t.equal(id.protectedHeader.typ, 'JWT');
  t.equal(id.payload.nonce, 'n-1');
  const accessToken = await signAccessToken(
    buildAccessTokenClaims({
      ...base,
      scopes: ['openid'],
      jti: 'at_3',
      resource: 'https://api.example.com',
      dpopJkt: 'thumb',
    }),
    key,
  );
  const at = await jwtVerify(accessToken, jwks, {
    issuer: ISSUER,
    audience: 'https://api.example.com',
    typ: 'at+jwt',
    algorithms: ['ES256'],
    currentDate: new Date(NOW),
  });
  t.same(at.payload.cnf, { jkt: 'thumb' });
  await t.rejects(
    jwtVerify(accessToken, jwks, { audience: 'cl_1', currentDate: new Date(NOW) }),
    'the resource token is not for the client',
  );
  const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const forged = await signIdToken(buildIdTokenClaims(base), { kid: 'k1', privateKey: stranger.privateKey });
  await t.rejects(
    jwtVerify(forged, jwks, { currentDate: new Date(NOW) }),
    'a token signed by another key does not verify',
  );
});

t.test('signs with a non-extractable WebCrypto key, as the key ring holds it', async (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const cryptoKey = await importJWK(privateKey.export({ format: 'jwk' }) as Record<string, string>, 'ES256', {
    extractable: false,
  });
  const jwks = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k2', alg: 'ES256', use: 'sig' }] });
  const token = await signAccessToken(buildAccessTokenClaims({ ...base, scopes: ['openid'], jti: 'at_4' }), {
    kid: 'k2',
    privateKey: cryptoKey as webcrypto.CryptoKey,
  });
  const verified = await jwtVerify(token, jwks, {
    issuer: ISSUER,
    audience: 'cl_1',
    typ: 'at+jwt',
    currentDate: new Date(NOW),
  });
  t.equal(verified.payload.client_id, 'cl_1');
});
