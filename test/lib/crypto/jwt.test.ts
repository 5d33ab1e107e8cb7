import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { CompactSign, SignJWT, compactVerify, createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify } from 'jose';
import {
  checkJws,
  checkJwt,
  checkJwtTimes,
  decodeJwt,
  importPublicJwk,
  JwtCheckError,
  nodeKey,
  signJwt,
  verifyJwt,
} from '#lib/crypto/jwt.js';

for (const alg of ['ES256', 'EdDSA'] as const) {
  t.test(`${alg}: interoperates with jose both ways and refuses what jose would`, async (t) => {
    const { publicKey, privateKey } = await generateKeyPair(alg, alg === 'EdDSA' ? { crv: 'Ed25519' } : {});
    const jwk = await exportJWK(publicKey);
    const key = importPublicJwk(jwk as Record<string, unknown>);
    t.equal(key.type, 'public');

    const ours = signJwt({ typ: 'x+jwt', kid: 'k1' }, { sub: 'a', n: 1, iat: 5 }, privateKey, alg);
    const byJose = await compactVerify(ours, publicKey, { algorithms: [alg] });
    t.same(JSON.parse(Buffer.from(byJose.payload).toString()), { sub: 'a', n: 1, iat: 5 }, 'a given iat is kept');
    t.match(byJose.protectedHeader, { alg, typ: 'x+jwt', kid: 'k1' });
    t.equal(nodeKey(privateKey), nodeKey(privateKey), 'one KeyObject per CryptoKey');
    const plain = signJwt({}, { sub: 'a' }, privateKey, alg);
    t.same(decodeJwt(plain), { header: { alg }, payload: { sub: 'a' } }, 'no typ and no iat are added');
    await jwtVerify(ours, publicKey, { algorithms: [alg], typ: 'x+jwt' });

    const theirs = await new SignJWT({ sub: 'b' }).setProtectedHeader({ alg, typ: 'x+jwt' }).sign(privateKey);
    t.match(verifyJwt(theirs, key, { alg, typ: 'x+jwt' }), { header: { alg }, payload: { sub: 'b' } });
    t.throws(() => verifyJwt(theirs, key, { alg, typ: 'at+jwt' }), 'another typ');
    t.throws(() => verifyJwt(theirs, key, { alg, issuer: 'https://a' }), 'a missing iss');

    const [h, p, s] = theirs.split('.') as [string, string, string];
    const flipped = Buffer.from(s, 'base64url');
    flipped[0]! ^= 1;
    t.throws(() => verifyJwt(`${h}.${p}.${flipped.toString('base64url')}`, key, { alg }), 'a changed signature');
    t.throws(
      () => verifyJwt(`${h}.${Buffer.from('{"sub":"c"}').toString('base64url')}.${s}`, key, { alg }),
      'a changed payload',
    );
    t.throws(() => verifyJwt(theirs, key, { alg: alg === 'ES256' ? 'EdDSA' : 'ES256' }), 'another algorithm');
    const crit = await new CompactSign(new TextEncoder().encode('{}'))
      .setProtectedHeader({ alg, crit: ['b64'], b64: true })
      .sign(privateKey);
    t.throws(() => verifyJwt(crit, key, { alg }), 'a crit header is never understood');
    for (const junk of ['', 'a.b', `${Buffer.from('[]').toString('base64url')}.${p}.${s}`, `${h}.${p}.`]) {
      t.throws(() => verifyJwt(junk, key, { alg }), `junk: ${junk.slice(0, 20)}`);
    }
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${p}.`;
    t.throws(() => verifyJwt(unsigned, key, { alg }), 'alg none');
    const other = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
    t.throws(() => verifyJwt(theirs, other.publicKey, { alg }), 'another key');
  });
}

t.test('checks the time claims against the given clock', async (t) => {
  const now = 1_000_000_000_000;
  const s = now / 1000;
  t.ok(checkJwtTimes({ exp: s + 1 }, now));
  t.notOk(checkJwtTimes({ exp: s }, now), 'exp is exclusive');
  t.notOk(checkJwtTimes({}, now), 'exp is required by default');
  t.ok(checkJwtTimes({}, now, { requireExp: false }));
  t.notOk(checkJwtTimes({ exp: s + 10, nbf: s + 1 }, now), 'not yet valid');
  t.notOk(checkJwtTimes({ exp: '9999999999' }, now), 'a string exp');
  t.ok(checkJwtTimes({ exp: s - 100 }, now, { toleranceSeconds: 200 }));
});

t.test('a JWK that is no valid public key is refused on import', async (t) => {
  t.throws(() => importPublicJwk({ kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA' }));
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  t.throws(() => importPublicJwk(privateKey.export({ format: 'jwk' }) as Record<string, unknown>), 'a private JWK');
});

t.test('checkJwt: signature by a key or a key set, then the claims as jose would check them', async (t) => {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] };
  const now = 1_000_000_000_000;
  const s = now / 1000;
  const claims = { iss: 'https://id', sub: 'c1', aud: ['https://id/auth/token', 'x'], iat: s - 10, exp: s + 60 };
  const token = signJwt({ kid: 'k1', typ: 'at+jwt' }, claims, privateKey, 'ES256');
  const base = { algorithms: ['ES256'], now };
  const checked = await checkJwt(token, createLocalJWKSet(jwks), {
    ...base,
    typ: 'application/AT+JWT',
    issuer: ['https://other', 'https://id'],
    subject: 'c1',
    audience: 'https://id/auth/token',
    requiredClaims: ['exp', 'iat'],
    maxTokenAgeSeconds: 60,
  });
  t.same(checked.payload, claims);
  t.same((await checkJwt(token, publicKey, base)).payload, claims, 'a CryptoKey as the key');

  const refusal = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    return error instanceof JwtCheckError ? [error.code, error.claim] : [String(error)];
  };
  t.same(await refusal(checkJwt(token, publicKey, { ...base, algorithms: ['EdDSA'] })), ['algorithm', undefined]);
  t.same(await refusal(checkJwt(token, publicKey, { ...base, typ: 'JWT' })), ['claim', 'typ']);
  t.same(await refusal(checkJwt(token, publicKey, { ...base, issuer: 'https://x' })), ['claim', 'iss']);
  t.same(await refusal(checkJwt(token, publicKey, { ...base, subject: 'c2' })), ['claim', 'sub']);
  t.same(await refusal(checkJwt(token, publicKey, { ...base, audience: ['y', 'z'] })), ['claim', 'aud']);
  t.same(await refusal(checkJwt(token, publicKey, { ...base, requiredClaims: ['jti'] })), ['claim', 'jti']);
  t.same(
    await refusal(checkJwt(token, publicKey, { ...base, now: now + 60_000 })),
    ['expired', 'exp'],
    'exp is exclusive',
  );
  t.same((await checkJwt(token, publicKey, { ...base, now: now + 60_000, clockToleranceSeconds: 1 })).payload, claims);
  t.same(await refusal(checkJwt(token, publicKey, { ...base, maxTokenAgeSeconds: 5 })), ['expired', 'iat']);
  t.same(await refusal(checkJwt(token, publicKey, { ...base, now: now - 20_000, maxTokenAgeSeconds: 60 })), [
    'claim',
    'iat',
  ]);
  const early = signJwt({}, { nbf: s + 30 }, privateKey, 'ES256');
  t.same(await refusal(checkJwt(early, publicKey, base)), ['claim', 'nbf']);
  const other = await generateKeyPair('ES256');
  t.same(await refusal(checkJwt(token, other.publicKey, base)), ['signature', undefined]);
  t.same(await refusal(checkJwt('a.b', publicKey, base)), ['malformed', undefined]);
  const noKid = await refusal(checkJwt(signJwt({ kid: 'k9' }, {}, privateKey, 'ES256'), createLocalJWKSet(jwks), base));
  t.match(noKid[0], /no applicable key/i, "the key set's own error passes through");
  const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{}').toString('base64url')}.`;
  t.same(await refusal(checkJwt(unsigned, publicKey, base)), ['algorithm', undefined]);
});

t.test('checkJws: a signed document without time claims, its signed bytes as received', async (t) => {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const canonical = '{"a":1,"b":[true,null],"c":"x"}';
  const jws = signJwt({ typ: 'doc+jwt' }, JSON.parse(canonical) as Record<string, unknown>, privateKey, 'ES256');
  const { input, header } = await checkJws(jws, publicKey, { algorithms: ['ES256'] });
  t.equal(
    Buffer.from(input.split('.')[1]!, 'base64url').toString(),
    canonical,
    'the payload is written back byte for byte',
  );
  t.equal(header['typ'], 'doc+jwt');
  const byJose = await new CompactSign(new TextEncoder().encode(canonical))
    .setProtectedHeader({ alg: 'ES256' })
    .sign(privateKey);
  t.ok(await checkJws(byJose, publicKey, { algorithms: ['ES256'] }), "jose's compact JWS checks too");
});
