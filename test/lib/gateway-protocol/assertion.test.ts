import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { createLocalJWKSet, exportJWK, jwtVerify } from 'jose';
import { buildUpstreamAssertion, nestActors } from '#lib/gateway-protocol/assertion.js';

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const NOW = Date.UTC(2026, 10, 22, 3, 0, 0);

t.test('an ES256 assertion that verifies with the JWKS', async (t) => {
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'g1', alg: 'ES256', use: 'sig' }] };
  const jwt = await buildUpstreamAssertion(
    {
      issuer: 'https://gate.example.test',
      audience: 'http://app.internal:8080',
      subject: 'u1',
      principalType: 'human',
      assurance: 'passkey',
      email: 'a@example.test',
      orgs: [{ slug: 'acme', role: 'admin' }],
      now: NOW,
    },
    { kid: 'g1', privateKey },
  );
  const { payload, protectedHeader } = await jwtVerify(jwt, createLocalJWKSet(jwks), {
    issuer: 'https://gate.example.test',
    audience: 'http://app.internal:8080',
    currentDate: new Date(NOW),
  });
  t.equal(protectedHeader.alg, 'ES256');
  t.equal(protectedHeader.kid, 'g1');
  t.match(payload, {
    sub: 'u1',
    principal_type: 'human',
    assurance: 'passkey',
    acr: 'passkey',
    email: 'a@example.test',
    orgs: [{ slug: 'acme', role: 'admin' }],
  });
  t.ok(payload.exp! - payload.iat! <= 300);
  t.type(payload.jti, 'string');
  await t.rejects(
    jwtVerify(jwt, createLocalJWKSet(jwks), { audience: 'http://other', currentDate: new Date(NOW) }),
    'another audience is refused',
  );
});

t.test('never lives longer than five minutes', async (t) => {
  const jwt = await buildUpstreamAssertion(
    {
      issuer: 'https://g',
      audience: 'https://a',
      subject: 's',
      principalType: 'agent',
      assurance: 'passkey',
      now: NOW,
      ttlSeconds: 3600,
    },
    { kid: 'g1', privateKey },
  );
  const payload = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as { iat: number; exp: number };
  t.equal(payload.exp - payload.iat, 300);
  await t.rejects(
    buildUpstreamAssertion(
      {
        issuer: 'https://g',
        audience: 'https://a',
        subject: 's',
        principalType: 'agent',
        assurance: 'passkey',
        now: NOW,
        ttlSeconds: 0,
      },
      { kid: 'g1', privateKey },
    ),
  );
});

t.test('the actors of an exchanged token go in as a nested act claim, newest outermost', async (t) => {
  t.same(nestActors(['cl_api', 'cl_notes', 'agt_1']), {
    sub: 'cl_api',
    act: { sub: 'cl_notes', act: { sub: 'agt_1' } },
  });
  t.same(nestActors(['agt_1']), { sub: 'agt_1' });
  const jwt = await buildUpstreamAssertion(
    {
      issuer: 'https://g',
      audience: 'https://a',
      subject: 'u1',
      principalType: 'human',
      assurance: 'passkey',
      actors: ['agt_1', 'cl_notes'],
      now: NOW,
    },
    { kid: 'g1', privateKey },
  );
  const payload = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
  t.same(payload['act'], { sub: 'agt_1', act: { sub: 'cl_notes' } });
});
