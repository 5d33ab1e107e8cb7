import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { exportJWK } from 'jose';
import {
  canReuseIssuedConfig,
  deriveIssuedPolicy,
  gatewayPublicUrls,
  hashGatewayPolicy,
  hashIssuedContent,
  signGatewayConfig,
} from '#lib/gateway-protocol/config-issuance.js';
import { verifyGatewayConfig } from '#lib/gateway-protocol/signed-config.js';

const policy = {
  mode: 'enforce' as const,
  routes: [{ path: '/api', scopes: ['read'], min_assurance: 'passkey' as const }],
};

t.test('the policy hash ignores member order', async (t) => {
  const reordered = {
    routes: [{ min_assurance: 'passkey' as const, scopes: ['read'], path: '/api' }],
    mode: 'enforce' as const,
  };
  t.equal(hashGatewayPolicy(reordered), hashGatewayPolicy(policy));
  t.not(hashGatewayPolicy({ ...policy, mode: 'observe' }), hashGatewayPolicy(policy));
});

t.test('an issued config is reused only with the same policy and key, before half its lifetime', async (t) => {
  const latest = { policyHash: 'p', kid: 'k', issuedAt: 0, expiresAt: 1000 };
  t.equal(canReuseIssuedConfig(null, { policyHash: 'p', kid: 'k', now: 0 }), false);
  t.equal(canReuseIssuedConfig(latest, { policyHash: 'p', kid: 'k', now: 499 }), true);
  t.equal(canReuseIssuedConfig(latest, { policyHash: 'p', kid: 'k', now: 500 }), false);
  t.equal(canReuseIssuedConfig(latest, { policyHash: 'q', kid: 'k', now: 0 }), false);
  t.equal(canReuseIssuedConfig(latest, { policyHash: 'p', kid: 'other', now: 0 }), false);
});

t.test("a signed config verifies with the gateway's verifier", async (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] };
  const now = Date.parse('2026-11-22T12:00:00Z');
  const signed = await signGatewayConfig(
    { issuer: 'https://id.example.com', clientId: 'cl_1', version: 3, policy, now, lifetimeSeconds: 60 },
    { kid: 'k1', privateKey },
  );
  const document = await verifyGatewayConfig(signed.jws, {
    keys: jwks,
    issuer: 'https://id.example.com',
    clientId: 'cl_1',
    now,
  });
  t.equal(document.version, 3);
  t.equal(document.hash, signed.hash);
  t.equal(signed.expiresAt - signed.issuedAt, 60_000);
  await t.rejects(
    signGatewayConfig(
      { issuer: 'x', clientId: 'c', version: 0, policy, now, lifetimeSeconds: 60 },
      { kid: 'k1', privateKey },
    ),
    RangeError,
  );
});

t.test('a route whose public URL is a registered resource carries it; others keep the gateway URL', async (t) => {
  const policy = {
    mode: 'enforce' as const,
    routes: [
      { path: '/' },
      { path: '/api' },
      { path: '/billing/' },
      { path: '/other', resource: 'https://forged.example/' },
    ],
  };
  const issued = deriveIssuedPolicy(policy, {
    redirectUris: ['https://app.example/cb', 'https://gw.example/_gate/callback'],
    resources: ['https://gw.example/api/', 'https://gw.example/billing', 'https://elsewhere.example/other'],
  });
  t.same(issued.routes, [
    { path: '/' },
    { path: '/api', resource: 'https://gw.example/api/' },
    { path: '/billing/', resource: 'https://gw.example/billing' },
    { path: '/other' },
  ]);
  t.same(gatewayPublicUrls(['https://gw.example/_gate/callback', 'https://x.example/cb']), ['https://gw.example']);
});

t.test('the deny list changes the issued content hash; the same list in any order does not', async (t) => {
  t.equal(hashIssuedContent(policy, []), hashGatewayPolicy(policy));
  t.not(hashIssuedContent(policy, ['a']), hashGatewayPolicy(policy));
  t.equal(hashIssuedContent(policy, ['a', 'b']), hashIssuedContent(policy, ['b', 'a']));
});

t.test('the access directory travels signed and a membership change changes the content hash', async (t) => {
  const member = { identities: { usr_a: { username: 'a', orgs: [{ slug: 'acme', role: 'member' as const }] } } };
  const removed = { identities: { usr_a: { username: 'a' } } };
  t.not(hashIssuedContent(policy, [], member), hashIssuedContent(policy, [], removed));
  t.not(hashIssuedContent(policy, [], removed), hashGatewayPolicy(policy));
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] };
  const now = Date.parse('2026-11-22T12:00:00Z');
  const sign = (directory: unknown) =>
    signGatewayConfig(
      {
        issuer: 'https://id.example.com',
        clientId: 'cl_1',
        version: 1,
        policy,
        now,
        lifetimeSeconds: 60,
        directory: directory as typeof member,
      },
      { kid: 'k1', privateKey },
    );
  const verify = async (directory: unknown) =>
    verifyGatewayConfig((await sign(directory)).jws, {
      keys: jwks,
      issuer: 'https://id.example.com',
      clientId: 'cl_1',
      now,
    });
  t.same((await verify(member)).directory, member);
  t.equal((await verify(undefined)).directory, undefined, 'no rules, no directory');
  await t.rejects(verify({ identities: { usr_a: { orgs: [{ slug: 'acme', role: 'boss' }] } } }), { code: 'malformed' });
});
