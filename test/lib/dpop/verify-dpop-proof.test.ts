import t from 'tap';
import { base64url, calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { isDpopError, type DpopCheck } from '#lib/dpop/errors.js';
import { checkDpopNonce, issueDpopNonce } from '#lib/dpop/nonce.js';
import { DpopKeyCache } from '#lib/dpop/key-cache.js';
import {
  computeAth,
  dpopReplayKey,
  verifyDpopProof,
  type VerifyDpopProofOptions,
} from '#lib/dpop/verify-dpop-proof.js';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const NOW_S = NOW / 1000;
const HTU = 'https://id.example.com/auth/token';

const es256 = await generateKeyPair('ES256', { extractable: true });
const es256Jwk = await exportJWK(es256.publicKey);
const ed = await generateKeyPair('EdDSA');
const edJwk = await exportJWK(ed.publicKey);
const other = await generateKeyPair('ES256');
const otherJwk = await exportJWK(other.publicKey);

interface ProofInput {
  claims?: Record<string, unknown>;
  header?: Record<string, unknown>;
  key?: CryptoKey;
  jwk?: JWK;
  alg?: string;
}

let counter = 0;
async function proof(input: ProofInput = {}): Promise<string> {
  const claims = { jti: `jti-${++counter}`, htm: 'POST', htu: HTU, iat: NOW_S, ...input.claims };
  for (const [k, v] of Object.entries(claims)) if (v === undefined) delete (claims as Record<string, unknown>)[k];
  return new SignJWT(claims)
    .setProtectedHeader({ alg: input.alg ?? 'ES256', typ: 'dpop+jwt', jwk: input.jwk ?? es256Jwk, ...input.header })
    .sign(input.key ?? es256.privateKey);
}

function memoryReplay(): VerifyDpopProofOptions['isReplay'] & { seen: Set<string> } {
  const seen = new Set<string>();
  const fn = async (jti: string, jkt: string) => {
    const key = dpopReplayKey(jti, jkt);
    if (seen.has(key)) return true;
    seen.add(key);
    return false;
  };
  return Object.assign(fn, { seen });
}

function options(overrides: Partial<VerifyDpopProofOptions> = {}): VerifyDpopProofOptions {
  return { htm: 'POST', htu: HTU, now: NOW, maxAgeSeconds: 60, isReplay: memoryReplay(), ...overrides };
}

async function refusal(promise: Promise<unknown>): Promise<{ code: string; check: DpopCheck } | 'accepted'> {
  try {
    await promise;
    return 'accepted';
  } catch (error) {
    if (!isDpopError(error)) throw error;
    return { code: error.code, check: error.check };
  }
}

t.test('accepts a good ES256 proof and returns its thumbprint', async (t) => {
  const result = await verifyDpopProof(await proof(), options());
  t.equal(result.jkt, await calculateJwkThumbprint(es256Jwk, 'sha256'));
  t.same(result.jwk, { kty: 'EC', crv: 'P-256', x: es256Jwk.x, y: es256Jwk.y });
  t.equal(result.iat, NOW_S);
  t.equal(result.alg, 'ES256');
  t.match(result.jti, /^jti-/);
});

t.test('accepts a good EdDSA proof', async (t) => {
  const result = await verifyDpopProof(await proof({ alg: 'EdDSA', key: ed.privateKey, jwk: edJwk }), options());
  t.equal(result.jkt, await calculateJwkThumbprint(edJwk, 'sha256'));
  t.equal(result.alg, 'EdDSA');
});

t.test('check 1: refuses a missing proof and more than one DPoP header', async (t) => {
  const good = await proof();
  t.match(await refusal(verifyDpopProof(undefined, options())), { code: 'invalid_dpop_proof', check: 'header' });
  t.match(await refusal(verifyDpopProof([good, good], options())), { code: 'invalid_dpop_proof', check: 'header' });
  t.match(await refusal(verifyDpopProof([], options())), { check: 'header' });
  t.match(
    await refusal(verifyDpopProof(`${good}, ${good}`, options())),
    { check: 'header' },
    'two headers joined by node',
  );
  t.match(await verifyDpopProof([good], options()), { alg: 'ES256' }, 'one header in an array is fine');
});

t.test('check 2: refuses something that is not a single well-formed JWT', async (t) => {
  const good = await proof();
  for (const bad of [
    '',
    'not-a-jwt',
    `${good}.extra`,
    good.split('.').slice(0, 2).join('.'),
    `${good} `,
    'a.b.c',
    'x'.repeat(9000),
  ]) {
    t.match(
      await refusal(verifyDpopProof(bad, options())),
      { code: 'invalid_dpop_proof', check: 'jwt' },
      bad.slice(0, 30),
    );
  }
  // A JSON-serialized JWS is not a compact one either.
  t.match(await refusal(verifyDpopProof(JSON.stringify({ payload: 'x' }), options())), {
    code: 'invalid_dpop_proof',
    check: 'jwt',
  });
});

t.test('check 3: refuses a proof missing a required claim', async (t) => {
  for (const claim of ['jti', 'htm', 'htu', 'iat']) {
    t.match(
      await refusal(verifyDpopProof(await proof({ claims: { [claim]: undefined } }), options())),
      { code: 'invalid_dpop_proof', check: 'claims' },
      `no ${claim}`,
    );
  }
  t.match(
    await refusal(verifyDpopProof(await proof({ claims: { iat: String(NOW_S) } }), options())),
    { check: 'claims' },
    'iat as a string',
  );
  t.match(
    await refusal(verifyDpopProof(await proof({ claims: { jti: 'j'.repeat(257) } }), options())),
    { check: 'claims' },
    'oversized jti',
  );
  t.match(
    await refusal(verifyDpopProof(await proof(), options({ accessToken: 'token' }))),
    { check: 'claims' },
    'no ath with an access token',
  );
});

t.test('check 4: refuses a typ other than dpop+jwt', async (t) => {
  for (const typ of ['JWT', 'at+jwt', 'DPOP+JWT', undefined]) {
    t.match(
      await refusal(verifyDpopProof(await proof({ header: { typ } }), options())),
      { code: 'invalid_dpop_proof', check: 'typ' },
      String(typ),
    );
  }
});

t.test('check 5: refuses alg none, HS256 and algorithms outside local policy', async (t) => {
  const encode = (value: unknown) => base64url.encode(JSON.stringify(value));
  const claims = { jti: 'none-1', htm: 'POST', htu: HTU, iat: NOW_S };
  const unsigned = `${encode({ alg: 'none', typ: 'dpop+jwt', jwk: es256Jwk })}.${encode(claims)}.`;
  t.match(
    await refusal(verifyDpopProof(unsigned, options())),
    { code: 'invalid_dpop_proof' },
    'alg none with an empty signature',
  );
  const noneWithSig = `${encode({ alg: 'none', typ: 'dpop+jwt', jwk: es256Jwk })}.${encode(claims)}.AAAA`;
  t.match(await refusal(verifyDpopProof(noneWithSig, options())), { check: 'alg' }, 'alg none');

  const secret = new Uint8Array(32).fill(7);
  const hs = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct', ...{ k: base64url.encode(secret) } } })
    .sign(secret);
  t.match(await refusal(verifyDpopProof(hs, options())), { code: 'invalid_dpop_proof', check: 'alg' }, 'HS256');

  const rsa = await generateKeyPair('PS256');
  const ps = await proof({ alg: 'PS256', key: rsa.privateKey, jwk: await exportJWK(rsa.publicKey) });
  t.match(await refusal(verifyDpopProof(ps, options())), { check: 'alg' }, 'PS256 is outside local policy');
  t.match(
    await refusal(
      verifyDpopProof(
        await proof({ alg: 'EdDSA', key: ed.privateKey, jwk: edJwk }),
        options({ algorithms: ['ES256'] }),
      ),
    ),
    { check: 'alg' },
    'narrowed policy',
  );
});

t.test('check 6: refuses a proof not signed by the key in jwk', async (t) => {
  t.match(await refusal(verifyDpopProof(await proof({ jwk: otherJwk }), options())), {
    code: 'invalid_dpop_proof',
    check: 'signature',
  });
  const good = await proof();
  const [h, p] = good.split('.');
  const tampered = `${h}.${base64url.encode(JSON.stringify({ jti: 'x', htm: 'POST', htu: HTU, iat: NOW_S }))}.${good.split('.')[2]}`;
  t.match(await refusal(verifyDpopProof(tampered, options())), { check: 'signature' }, 'payload swapped');
  t.ok(p);
});

t.test('check 7: refuses a jwk with private members, a missing jwk or one unfit for the alg', async (t) => {
  const privateJwk = await exportJWK(es256.privateKey);
  t.match(
    await refusal(verifyDpopProof(await proof({ jwk: privateJwk }), options())),
    { code: 'invalid_dpop_proof', check: 'jwk' },
    'private EC key',
  );
  t.match(
    await refusal(verifyDpopProof(await proof({ header: { jwk: undefined } }), options())),
    { check: 'jwk' },
    'no jwk',
  );
  t.match(
    await refusal(verifyDpopProof(await proof({ jwk: edJwk }), options())),
    { check: 'jwk' },
    'OKP key with ES256',
  );
  t.match(
    await refusal(verifyDpopProof(await proof({ jwk: { ...es256Jwk, k: 'AAAA' } as JWK }), options())),
    { check: 'jwk' },
    'symmetric member',
  );
});

t.test('check 8: refuses a proof for another method', async (t) => {
  t.match(await refusal(verifyDpopProof(await proof({ claims: { htm: 'GET' } }), options())), {
    code: 'invalid_dpop_proof',
    check: 'htm',
  });
  t.match(
    await refusal(verifyDpopProof(await proof({ claims: { htm: 'post' } }), options())),
    { check: 'htm' },
    'methods are case-sensitive',
  );
});

t.test(
  'check 9: refuses a proof for another URI, compared without query and fragment after normalization',
  async (t) => {
    for (const htu of [
      'https://id.example.com/auth/userinfo',
      'https://other.example.com/auth/token',
      'http://id.example.com/auth/token',
      'https://id.example.com:8443/auth/token',
      'https://id.example.com/auth/token/',
      'https://id.example.com/AUTH/token',
      'not a uri',
    ]) {
      t.match(
        await refusal(verifyDpopProof(await proof({ claims: { htu } }), options())),
        { code: 'invalid_dpop_proof', check: 'htu' },
        htu,
      );
    }
    for (const htu of [
      'https://ID.Example.COM/auth/token',
      'HTTPS://id.example.com/auth/token',
      'https://id.example.com:443/auth/token',
      'https://id.example.com/auth/token?x=1',
      'https://id.example.com/auth/token#frag',
      'https://id.example.com/auth/%74oken',
      'https://id.example.com/auth/./token',
    ]) {
      t.equal(
        await refusal(verifyDpopProof(await proof({ claims: { htu } }), options())),
        'accepted',
        `equivalent: ${htu}`,
      );
    }
    t.equal(
      await refusal(verifyDpopProof(await proof(), options({ htu: `${HTU}?state=1` }))),
      'accepted',
      'the request query is ignored too',
    );
  },
);

t.test('check 10: a required nonce that is missing or wrong is use_dpop_nonce', async (t) => {
  t.match(
    await refusal(verifyDpopProof(await proof(), options({ nonce: 'n-1' }))),
    { code: 'use_dpop_nonce', check: 'nonce' },
    'missing',
  );
  t.match(
    await refusal(verifyDpopProof(await proof({ claims: { nonce: 'n-2' } }), options({ nonce: 'n-1' }))),
    { code: 'use_dpop_nonce', check: 'nonce' },
    'wrong',
  );
  t.match(await verifyDpopProof(await proof({ claims: { nonce: 'n-1' } }), options({ nonce: 'n-1' })), {
    nonce: 'n-1',
  });

  const key = new Uint8Array(32).fill(1);
  const issued = issueDpopNonce({ key, audience: HTU, now: NOW });
  const check = (n: string) => checkDpopNonce(n, { key, audience: HTU, now: NOW });
  t.match(
    await verifyDpopProof(await proof({ claims: { nonce: issued } }), options({ nonce: check })),
    { nonce: issued },
    'stateless nonce accepted',
  );
  const stale = issueDpopNonce({ key, audience: HTU, now: NOW - 700_000 });
  t.match(
    await refusal(verifyDpopProof(await proof({ claims: { nonce: stale } }), options({ nonce: check }))),
    { code: 'use_dpop_nonce' },
    'expired stateless nonce',
  );
  t.match(
    await refusal(verifyDpopProof(await proof({ claims: { nonce: 42 } }), options({ nonce: check }))),
    { code: 'invalid_dpop_proof', check: 'claims' },
    'a non-string nonce is malformed',
  );
});

t.test('check 11: refuses a stale iat and one too far in the future', async (t) => {
  t.match(
    await refusal(verifyDpopProof(await proof({ claims: { iat: NOW_S - 61 } }), options())),
    { code: 'invalid_dpop_proof', check: 'iat' },
    'stale',
  );
  t.match(
    await refusal(verifyDpopProof(await proof({ claims: { iat: NOW_S + 6 } }), options())),
    { check: 'iat' },
    'future',
  );
  t.equal(
    await refusal(verifyDpopProof(await proof({ claims: { iat: NOW_S - 60 } }), options())),
    'accepted',
    'at the edge of the window',
  );
  t.equal(
    await refusal(verifyDpopProof(await proof({ claims: { iat: NOW_S + 4 } }), options())),
    'accepted',
    'small skew',
  );
  t.match(
    await refusal(verifyDpopProof(await proof({ claims: { iat: NOW_S + 4 } }), options({ maxFutureSeconds: 0 }))),
    { check: 'iat' },
  );
});

t.test('check 12: refuses a wrong ath and a key other than the bound one', async (t) => {
  const token = 'eyJ.access.token';
  t.equal(
    computeAth(token),
    base64url.encode(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token)))),
  );
  const good = await verifyDpopProof(
    await proof({ claims: { ath: computeAth(token) } }),
    options({ accessToken: token, boundJkt: await calculateJwkThumbprint(es256Jwk, 'sha256') }),
  );
  t.ok(good.jkt);
  t.match(
    await refusal(
      verifyDpopProof(await proof({ claims: { ath: computeAth('another') } }), options({ accessToken: token })),
    ),
    { code: 'invalid_dpop_proof', check: 'ath' },
  );
  const otherJkt = await calculateJwkThumbprint(otherJwk, 'sha256');
  t.match(
    await refusal(
      verifyDpopProof(
        await proof({ claims: { ath: computeAth(token) } }),
        options({ accessToken: token, boundJkt: otherJkt }),
      ),
    ),
    { code: 'invalid_dpop_proof', check: 'binding' },
  );
  // A precomputed hash (the gateway's cache of verified tokens) is what the proof is held to.
  await verifyDpopProof(
    await proof({ claims: { ath: computeAth(token) } }),
    options({ accessToken: token, accessTokenHash: computeAth(token) }),
  );
  t.match(
    await refusal(
      verifyDpopProof(
        await proof({ claims: { ath: computeAth(token) } }),
        options({ accessToken: token, accessTokenHash: computeAth('another') }),
      ),
    ),
    { check: 'ath' },
  );
  t.match(
    await refusal(verifyDpopProof(await proof({ claims: { ath: 'é'.repeat(43) } }), options({ accessToken: token }))),
    { check: 'ath' },
    'an ath of another byte length is refused, not thrown on',
  );
});

t.test('refuses a replayed proof, and remembers the jti only for valid proofs', async (t) => {
  const isReplay = memoryReplay();
  const good = await proof();
  await verifyDpopProof(good, options({ isReplay }));
  t.match(await refusal(verifyDpopProof(good, options({ isReplay }))), { code: 'invalid_dpop_proof', check: 'replay' });
  const before = isReplay.seen.size;
  await refusal(verifyDpopProof(await proof({ claims: { htm: 'GET' } }), options({ isReplay })));
  t.equal(isReplay.seen.size, before, 'a refused proof leaves no jti behind');
  let expiry = 0;
  await verifyDpopProof(
    await proof({ claims: { iat: NOW_S - 10 } }),
    options({ isReplay: async (_j, _k, at) => ((expiry = at), false) }),
  );
  t.equal(expiry, NOW - 10_000 + 60_000, 'the jti is kept until the proof could no longer be accepted');
});

t.test('uses a 60 s window by default', async (t) => {
  const { maxAgeSeconds: _omit, ...rest } = options();
  t.equal(await refusal(verifyDpopProof(await proof({ claims: { iat: NOW_S - 60 } }), rest)), 'accepted');
  t.match(await refusal(verifyDpopProof(await proof({ claims: { iat: NOW_S - 61 } }), rest)), { check: 'iat' });
});

t.test('a key cache gives the same answers with one import per client key', async (t) => {
  const keyCache = new DpopKeyCache(100);
  const first = await verifyDpopProof(await proof(), options({ keyCache }));
  const second = await verifyDpopProof(await proof(), options({ keyCache }));
  t.equal(second.jkt, first.jkt);
  t.equal(first.jkt, await calculateJwkThumbprint(es256Jwk, 'sha256'));
  t.equal(
    keyCache.resolve(es256Jwk, 'ES256'),
    keyCache.resolve({ ...es256Jwk, use: 'sig' }, 'ES256'),
    'members outside the key do not make another entry',
  );
  // A cached key still refuses what it did not sign, and a bound key still has to match.
  t.match(await refusal(verifyDpopProof(await proof({ jwk: otherJwk }), options({ keyCache }))), {
    check: 'signature',
  });
  t.match(
    await refusal(
      verifyDpopProof(
        await proof({ jwk: otherJwk, key: other.privateKey }),
        options({ keyCache, boundJkt: first.jkt }),
      ),
    ),
    { check: 'binding' },
  );
  t.match(
    await refusal(
      verifyDpopProof(await proof({ alg: 'EdDSA', key: ed.privateKey, jwk: es256Jwk }), options({ keyCache })),
    ),
    { check: 'jwk' },
  );
});

t.test('a key that does not import is not remembered', async (t) => {
  const keyCache = new DpopKeyCache(100);
  const broken = { kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA' };
  const first = keyCache.resolve(broken, 'ES256');
  await t.rejects(first);
  const again = keyCache.resolve(broken, 'ES256');
  t.not(again, first, 'the next attempt imports again');
  await t.rejects(again);
});

t.test("a client's proofs share one header: parsed once, still checked on every proof", async (t) => {
  const keyCache = new DpopKeyCache(100);
  const good = await proof();
  const segment = good.split('.')[0]!;
  await verifyDpopProof(good, options({ keyCache }));
  const parsed = keyCache.header(segment, () => t.fail('parsed again') as never);
  t.match(parsed, { alg: 'ES256', typ: 'dpop+jwt', jwk: { kty: 'EC' } }, 'the header is remembered by its segment');
  t.ok(Object.isFrozen(parsed) && Object.isFrozen(parsed.jwk), 'and cannot be changed by a caller');
  t.equal(await refusal(verifyDpopProof(await proof(), options({ keyCache }))), 'accepted');
  // The same header with a narrower local policy is refused, hit or miss.
  t.match(await refusal(verifyDpopProof(await proof(), options({ keyCache, algorithms: ['EdDSA'] }))), {
    check: 'alg',
  });
});

t.test('a payload that is not JSON is refused as a malformed proof, with or without a key cache', async (t) => {
  const [header, , signature] = (await proof()).split('.');
  const garbled = `${header}.${base64url.encode('{not json')}.${signature}`;
  for (const keyCache of [undefined, new DpopKeyCache(100)])
    t.match(await refusal(verifyDpopProof(garbled, options(keyCache ? { keyCache } : {}))), {
      code: 'invalid_dpop_proof',
      check: 'jwt',
    });
});
