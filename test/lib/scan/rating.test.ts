import t from 'tap';
import { CompactSign, exportJWK, generateKeyPair, compactVerify, createLocalJWKSet, decodeProtectedHeader } from 'jose';
import {
  analyzeScan,
  buildRatingBody,
  RATING_TYP,
  signRating,
  verifyRating,
  RatingVerificationError,
} from '#lib/scan/index.js';
import { HARDENED, site } from './captures.js';

async function ring() {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  return { signer: { kid: 'k1', privateKey }, jwks: { keys: [jwk] } };
}

t.test('a signed Rating verifies offline with the JWKS alone', async (t) => {
  const { signer, jwks } = await ring();
  const body = buildRatingBody(
    analyzeScan(site(HARDENED)),
    'https://www.shop.example/',
    new Date('2026-11-20T10:00:00Z'),
  );
  const rating = await signRating(body, signer);
  t.match(rating, {
    grade: 'A+',
    score: 135,
    scanned_at: '2026-11-20T10:00:00.000Z',
    url: 'https://www.shop.example/',
  });
  t.equal(rating.tests.length, 10);
  t.same(Object.keys(rating.tests[0]!).sort(), ['name', 'pass', 'result', 'score_modifier']);
  t.same(await verifyRating(rating, jwks), body);
  // jose alone, as an outside verifier would.
  const { payload, protectedHeader } = await compactVerify(rating.signature, createLocalJWKSet(jwks));
  t.equal(protectedHeader.typ, RATING_TYP);
  t.equal(JSON.parse(new TextDecoder().decode(payload)).grade, 'A+');
});

t.test('refuses an altered Rating, another key, and another document type', async (t) => {
  const { signer, jwks } = await ring();
  const other = await ring();
  const rating = await signRating(
    buildRatingBody(analyzeScan(site([])), 'https://www.shop.example/', new Date()),
    signer,
  );
  await t.rejects(verifyRating({ ...rating, grade: 'A+' }, jwks), { code: 'altered' });
  await t.rejects(verifyRating(rating, other.jwks), { code: 'bad_signature' });
  const foreign = await new CompactSign(new TextEncoder().encode('{}'))
    .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'JWT' })
    .sign(signer.privateKey);
  await t.rejects(verifyRating({ ...rating, signature: foreign }, jwks), RatingVerificationError);
  t.equal(decodeProtectedHeader(rating.signature).kid, 'k1');
});
