import t from 'tap';
import { reasonOf } from '../../helpers/reason-of.js';
import { exportJWK, generateKeyPair } from 'jose';
import { checkAgentJwk } from '#lib/agents/jwk.js';

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
  t.equal(
    reasonOf(() => checkAgentJwk(priv)),
    'private_key_material',
  );
  const pub = { kty: 'EC', crv: 'P-256', x: priv.x, y: priv.y };
  for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) {
    t.equal(
      reasonOf(() => checkAgentJwk({ ...pub, [member]: 'AAAA' })),
      'private_key_material',
      member,
    );
  }
  t.equal(
    reasonOf(() => checkAgentJwk({ kty: 'oct', k: 'c2VjcmV0' })),
    'private_key_material',
  );
});

t.test('refuses unsupported curves, key types and malformed coordinates', async (t) => {
  const p384 = await exportJWK((await generateKeyPair('ES384')).publicKey);
  t.equal(
    reasonOf(() => checkAgentJwk(p384)),
    'unsupported_key',
  );
  const rsa = await exportJWK((await generateKeyPair('RS256')).publicKey);
  t.equal(
    reasonOf(() => checkAgentJwk(rsa)),
    'unsupported_key',
  );
  t.equal(
    reasonOf(() => checkAgentJwk({ kty: 'EC', crv: 'P-256', x: 'short', y: 'short' })),
    'unsupported_key',
  );
  t.equal(
    reasonOf(() => checkAgentJwk({ kty: 'OKP', crv: 'X25519', x: 'A'.repeat(43) })),
    'unsupported_key',
  );
  t.equal(
    reasonOf(() => checkAgentJwk(null)),
    'unsupported_key',
  );
  t.equal(
    reasonOf(() => checkAgentJwk([])),
    'unsupported_key',
  );
});
