import t from 'tap';
import { exportJWK, generateKeyPair } from 'jose';
import { checkAgentJwk } from '../../../lib/agents/jwk.js';

t.test('accepts P-256 and Ed25519 public keys and keeps only public members', async (t) => {
  const ec = await exportJWK((await generateKeyPair('ES256')).publicKey);
  const checked = checkAgentJwk({ ...ec, kid: 'k1', use: 'sig' });
  t.equal(checked.alg, 'ES256');
  t.same(checked.jwk, { kty: 'EC', crv: 'P-256', x: ec.x, y: ec.y });
  const ed = await exportJWK((await generateKeyPair('EdDSA', { crv: 'Ed25519' })).publicKey);
  t.equal(checkAgentJwk(ed).alg, 'EdDSA');
});

t.test('refuses every private member with private_key_material', async (t) => {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const priv = await exportJWK(privateKey);
  t.throws(() => checkAgentJwk(priv), { reason: 'private_key_material' });
  const pub = { kty: 'EC', crv: 'P-256', x: priv.x, y: priv.y };
  for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) {
    t.throws(() => checkAgentJwk({ ...pub, [member]: 'AAAA' }), { reason: 'private_key_material' }, member);
  }
  t.throws(() => checkAgentJwk({ kty: 'oct', k: 'c2VjcmV0' }), { reason: 'private_key_material' });
});

t.test('refuses unsupported curves, key types and malformed coordinates', async (t) => {
  const p384 = await exportJWK((await generateKeyPair('ES384')).publicKey);
  t.throws(() => checkAgentJwk(p384), { reason: 'unsupported_key' });
  const rsa = await exportJWK((await generateKeyPair('RS256')).publicKey);
  t.throws(() => checkAgentJwk(rsa), { reason: 'unsupported_key' });
  t.throws(() => checkAgentJwk({ kty: 'EC', crv: 'P-256', x: 'short', y: 'short' }), { reason: 'unsupported_key' });
  t.throws(() => checkAgentJwk({ kty: 'OKP', crv: 'X25519', x: 'A'.repeat(43) }), { reason: 'unsupported_key' });
  t.throws(() => checkAgentJwk(null), { reason: 'unsupported_key' });
  t.throws(() => checkAgentJwk([]), { reason: 'unsupported_key' });
});
