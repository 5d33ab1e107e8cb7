import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { CompactSign, compactVerify, exportJWK, generateKeyPair } from 'jose';
import { importPublicJwk, nodeKey, signCompactJws, verifyCompactJws } from '../../../lib/crypto/node-jws.js';

for (const alg of ['ES256', 'EdDSA'] as const) {
  t.test(`${alg}: interoperates with jose both ways and refuses what jose would`, async (t) => {
    const { publicKey, privateKey } = await generateKeyPair(alg, alg === 'EdDSA' ? { crv: 'Ed25519' } : {});
    const jwk = await exportJWK(publicKey);
    const key = importPublicJwk(jwk as Record<string, unknown>);
    t.equal(key.type, 'public');

    const ours = signCompactJws({ typ: 'x+jwt', kid: 'k1' }, { sub: 'a', n: 1 }, privateKey, alg);
    const byJose = await compactVerify(ours, publicKey, { algorithms: [alg] });
    t.same(JSON.parse(Buffer.from(byJose.payload).toString()), { sub: 'a', n: 1 });
    t.match(byJose.protectedHeader, { alg, typ: 'x+jwt', kid: 'k1' });
    t.equal(nodeKey(privateKey), nodeKey(privateKey), 'one KeyObject per CryptoKey');

    const theirs = await new CompactSign(new TextEncoder().encode('payload'))
      .setProtectedHeader({ alg })
      .sign(privateKey);
    t.equal(verifyCompactJws(theirs, key, alg)?.payload.toString(), 'payload');

    const [h, p, s] = theirs.split('.') as [string, string, string];
    const flipped = Buffer.from(s, 'base64url');
    flipped[0]! ^= 1;
    t.equal(verifyCompactJws(`${h}.${p}.${flipped.toString('base64url')}`, key, alg), null, 'a changed signature');
    t.equal(
      verifyCompactJws(`${h}.${Buffer.from('other').toString('base64url')}.${s}`, key, alg),
      null,
      'a changed payload',
    );
    t.equal(verifyCompactJws(theirs, key, alg === 'ES256' ? 'EdDSA' : 'ES256'), null, 'another algorithm');
    const crit = await new CompactSign(new TextEncoder().encode('p'))
      .setProtectedHeader({ alg, crit: ['b64'], b64: true })
      .sign(privateKey);
    t.equal(verifyCompactJws(crit, key, alg), null, 'a crit header is never understood');
    for (const junk of [
      '',
      'a.b',
      'a.b.c.d',
      `${Buffer.from('[]').toString('base64url')}.${p}.${s}`,
      `${Buffer.from('{').toString('base64url')}.${p}.${s}`,
    ]) {
      t.equal(verifyCompactJws(junk, key, alg), null, `junk: ${junk.slice(0, 20)}`);
    }
    const other = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
    t.equal(verifyCompactJws(theirs, other.publicKey, alg), null, 'another key');
  });
}

t.test('a JWK that is no valid public key is refused on import', async (t) => {
  t.throws(() => importPublicJwk({ kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA' }));
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  t.throws(() => importPublicJwk(privateKey.export({ format: 'jwk' }) as Record<string, unknown>), 'a private JWK');
});
