import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { calculateJwkThumbprint, decodeProtectedHeader, exportJWK } from 'jose';
import { buildGatewayEvidence, verifyGatewayEvidence } from '#lib/gateway-protocol/evidence.js';

async function key() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicJwk = await exportJWK(publicKey);
  return { kid: await calculateJwkThumbprint(publicJwk), privateKey, publicJwk };
}

const now = Date.parse('2026-11-22T12:00:00Z');
const input = {
  issuer: 'https://gw.example.com',
  audience: 'https://id.example.com',
  clientId: 'cl_1',
  instance: 'inst-12345',
  config: { version: 2, hash: 'c'.repeat(64), mode: 'canary' as const },
  counts: { allowed: 4, refused: { unauthorized: 1 }, observed: { insufficient_scope: 2 } },
  lastEnforcementAt: now - 5000,
  startedAt: now - 60_000,
  now,
  ttlSeconds: 30,
};

t.test('a report carries its public key and instance, and verifies with that key', async (t) => {
  const k = await key();
  const jws = await buildGatewayEvidence(input, k);
  const header = decodeProtectedHeader(jws);
  t.equal(header.kid, k.kid);
  t.same(Object.keys(header.jwk!).sort(), ['crv', 'kty', 'x', 'y'], 'only the public members');
  const verified = await verifyGatewayEvidence(jws, { audience: input.audience, clientId: 'cl_1', now });
  t.same(verified, {
    clientId: 'cl_1',
    instance: 'inst-12345',
    gateway: input.issuer,
    keyThumbprint: k.kid,
    jti: verified.jti,
    issuedAt: now,
    expiresAt: now + 30_000,
    config: input.config,
    counts: input.counts,
    lastEnforcementAt: now - 5000,
    startedAt: now - 60_000,
  });
  t.ok(
    await verifyGatewayEvidence(jws, {
      audience: input.audience,
      clientId: 'cl_1',
      now,
      registeredKeys: [k.publicJwk],
    }),
    'a registered key',
  );
  await t.rejects(
    verifyGatewayEvidence(jws, {
      audience: input.audience,
      clientId: 'cl_1',
      now,
      registeredKeys: [(await key()).publicJwk],
    }),
    { code: 'invalid_evidence' },
  );
  await t.rejects(verifyGatewayEvidence(jws, { audience: input.audience, clientId: 'cl_2', now }), {
    code: 'invalid_evidence',
  });
  await t.rejects(
    verifyGatewayEvidence(jws, { audience: input.audience, clientId: 'cl_1', now: now + 31_000 }),
    /expired/,
  );
});
