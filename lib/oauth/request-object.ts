import { decodeProtectedHeader, type JWTVerifyGetKey } from 'jose';
import { checkJwt, JwtCheckError } from '../crypto/jwt.js';
import { CLIENT_SIGNING_ALGS } from './oidc-client-metadata.js';
import type { RawParams } from './authorization-request.js';

/**
 * Signed request objects (RFC 9101, OIDC Core §6): the authorization request as a JWT the client
 * signed with a key of its registered `jwks` / `jwks_uri`. Pure: the caller looks the keys up
 * and fetches a `request_uri`.
 */

/** Longest request object accepted (by value or fetched). */
export const MAX_REQUEST_OBJECT_BYTES = 32_768;
/** A request object may not live longer than this (seconds from now to `exp`), as FAPI 2.0 bounds it. */
const MAX_LIFETIME_SECONDS = 3600;
/** JWT claims that are not authorization parameters. */
const JWT_CLAIMS = ['iss', 'aud', 'exp', 'iat', 'nbf', 'jti'];

export type RequestObjectCheck =
  { ok: true; params: RawParams } | { ok: false; error: 'invalid_request_object'; description: string };

function refuse(description: string): RequestObjectCheck {
  return { ok: false, error: 'invalid_request_object', description };
}

/** A JSON claim as an authorization parameter: numbers (`max_age`) become strings, a one-string array its string (`resource`). */
function asParameter(value: unknown): unknown {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.length === 1 ? value[0] : value;
  // Objects (the `claims` parameter, which is not offered) are dropped, as in a plain request.
  return undefined;
}

/**
 * Verifies a request object and returns its parameters. It must be a signed JWS (never `alg:
 * none`, never encrypted) by one of the client's keys with the registered
 * `request_object_signing_alg` when there is one; `iss` the client, `aud` this issuer, a
 * bounded `exp`; and it must not nest `request` or `request_uri` (RFC 9101 §4).
 */
export async function verifyRequestObject(
  jwt: string,
  input: {
    clientId: string;
    issuer: string;
    now: number;
    keys: JWTVerifyGetKey;
    /** The registered `request_object_signing_alg`, when there is one: then only that. */
    signingAlg?: string;
  },
): Promise<RequestObjectCheck> {
  if (jwt.length > MAX_REQUEST_OBJECT_BYTES) return refuse('the request object is too large');
  const parts = jwt.split('.');
  if (parts.length === 5) return refuse('encrypted request objects are not supported');
  if (parts.length !== 3) return refuse('the request object is not a compact JWS');
  let alg: unknown;
  try {
    alg = decodeProtectedHeader(jwt).alg;
  } catch {
    return refuse('the request object header is malformed');
  }
  if (alg === 'none') return refuse('unsigned request objects (alg none) are refused');
  const algorithms = input.signingAlg ? [input.signingAlg] : [...CLIENT_SIGNING_ALGS];
  if (typeof alg !== 'string' || !algorithms.includes(alg))
    return refuse(`the request object must be signed with ${algorithms.join(', ')}`);
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await checkJwt(jwt, input.keys, {
      algorithms,
      issuer: input.clientId,
      audience: input.issuer,
      now: input.now,
      requiredClaims: ['iss', 'aud', 'exp'],
    }));
  } catch (error) {
    const code = error instanceof JwtCheckError ? error.code : undefined;
    if (code === 'expired') return refuse('the request object has expired');
    if (code === 'claim')
      return refuse(`the request object's ${(error as JwtCheckError).claim ?? 'claims'} claim is not valid`);
    return refuse("the request object's signature does not verify with the client's registered keys");
  }
  if ((payload.exp as number) - input.now / 1000 > MAX_LIFETIME_SECONDS)
    return refuse(`the request object may live at most ${MAX_LIFETIME_SECONDS} seconds`);
  if (payload.request !== undefined || payload.request_uri !== undefined)
    return refuse('a request object must not contain request or request_uri');
  if (payload.client_id !== undefined && payload.client_id !== input.clientId)
    return refuse('client_id in the request object differs from the request');
  const params: RawParams = {};
  for (const [name, value] of Object.entries(payload)) {
    if (JWT_CLAIMS.includes(name)) continue;
    const parameter = asParameter(value);
    if (parameter !== undefined) params[name] = parameter;
  }
  return { ok: true, params };
}

/**
 * OIDC Core §6.3.3: the request object's parameters combined with the plain ones, the request
 * object winning where both have one. `client_id` and `response_type` must agree where both
 * carry them (§6.1); `request` and `request_uri` do not survive.
 */
export function mergeRequestObject(
  outer: RawParams,
  object: RawParams,
): { ok: true; params: RawParams } | { ok: false; error: 'invalid_request_object'; description: string } {
  for (const name of ['client_id', 'response_type']) {
    if (object[name] !== undefined && outer[name] !== undefined && object[name] !== outer[name])
      return { ok: false, error: 'invalid_request_object', description: `${name} differs from the request object's` };
  }
  const merged: RawParams = { ...outer, ...object };
  delete merged.request;
  delete merged.request_uri;
  return { ok: true, params: merged };
}
