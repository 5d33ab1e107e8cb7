import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { checkJws, signJwt } from '../crypto/jwt.js';
import type { webcrypto, KeyObject } from 'node:crypto';
import { canonicalJson } from '../ledger/canonical-json.js';
import type { ScanAnalysis } from './analyze-scan.js';
import type { Expectation, TestName } from './expectations.js';
import type { Grade } from './grade.js';

/** The JWS `typ` of a Rating signature, distinct from every other signed Keyplane document. */
export const RATING_TYP = 'keyplane-rating+jws';

export interface RatingTest {
  name: TestName;
  pass: boolean;
  score_modifier: number;
  result: Expectation;
}

export interface RatingBody {
  grade: Grade;
  score: number;
  algorithm: string;
  /** RFC 3339. */
  scanned_at: string;
  url: string;
  tests: RatingTest[];
}

export interface Rating extends RatingBody {
  /** Compact JWS (ES256) whose payload is the RFC 8785 canonical JSON of every other member. */
  signature: string;
}

export interface RatingSigner {
  kid: string;
  privateKey: webcrypto.CryptoKey | KeyObject;
}

/** The Rating's signed members, from an analysis. */
export function buildRatingBody(analysis: ScanAnalysis, url: string, scannedAt: Date): RatingBody {
  return {
    grade: analysis.grade,
    score: analysis.score,
    algorithm: analysis.algorithm,
    scanned_at: scannedAt.toISOString(),
    url,
    tests: analysis.tests.map((t) => ({
      name: t.name,
      pass: t.pass,
      score_modifier: t.score_modifier,
      result: t.result,
    })),
  };
}

/** Signs a Rating: a compact JWS over the canonical JSON of its body, so the body travels in the clear. */
export async function signRating(body: RatingBody, signer: RatingSigner): Promise<Rating> {
  // The canonical form parsed back: JSON.stringify writes it again byte for byte (its numbers are
  // written the same way, its members stay in order), which `verifyRating` checks.
  const signature = signJwt(
    { kid: signer.kid, typ: RATING_TYP },
    JSON.parse(canonicalJson(body)) as Record<string, unknown>,
    signer.privateKey,
    'ES256',
  );
  return { ...body, signature };
}

export type RatingRefusal = 'bad_signature' | 'wrong_type' | 'altered';

export class RatingVerificationError extends Error {
  override name = 'RatingVerificationError';
  constructor(
    readonly code: RatingRefusal,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Verifies a Rating offline against the issuer's JWKS: ES256 by a listed key, the Rating `typ`,
 * and a payload that is exactly the canonical form of the members shown beside it.
 */
export async function verifyRating(rating: Rating, jwks: JSONWebKeySet): Promise<RatingBody> {
  const { signature, ...body } = rating;
  let verified: Awaited<ReturnType<typeof checkJws>>;
  try {
    verified = await checkJws(signature, createLocalJWKSet(jwks), { algorithms: ['ES256'] });
  } catch (error) {
    throw new RatingVerificationError('bad_signature', `the signature does not verify: ${(error as Error).message}`);
  }
  if (verified.header['typ'] !== RATING_TYP) throw new RatingVerificationError('wrong_type', 'the JWS is not a Rating');
  const signed = verified.input.slice(verified.input.indexOf('.') + 1);
  if (Buffer.from(signed, 'base64url').toString('utf8') !== canonicalJson(body)) {
    throw new RatingVerificationError('altered', 'the Rating differs from what was signed');
  }
  return body;
}
