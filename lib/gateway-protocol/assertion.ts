import type { KeyObject } from 'node:crypto';
import { signJwt } from '../crypto/jwt.js';
import { randomToken } from '../crypto/random.js';

/**
 * `X-Auth-Assertion`: the signed statement of who the gateway let through, so an upstream
 * never has to trust bare headers (the lesson of Google IAP and Cloudflare Access: an unsigned
 * identity header can be forged whenever the proxy is bypassed).
 */

/** Longest lifetime of an assertion (short-lived, at most 5 minutes, so a leaked one is soon useless). */
export const MAX_ASSERTION_SECONDS = 300;
export const ASSERTION_TYP = 'kp-gate-assertion+jwt';

export interface AssertionKey {
  kid: string;
  privateKey: KeyObject;
}

export interface AssertionInput {
  /** The gateway's public URL. */
  issuer: string;
  /** The upstream origin the request goes to. */
  audience: string;
  subject: string;
  principalType: 'human' | 'agent';
  assurance: string;
  email?: string;
  /** The `orgs` claim, as the ID token stated it (scope `orgs`). */
  orgs?: ReadonlyArray<{ slug: string; role: string }>;
  /** The `groups` claim, as the ID token stated it (scope `groups`). */
  groups?: readonly string[];
  /** The connection of a federated sign-in: `idp` (its id) and `idp_name`. */
  idp?: { id: string; name: string };
  /** Who acts for the subject (the token's RFC 8693 `act`), newest first; sent as a nested `act` claim. */
  actors?: readonly string[];
  /** Milliseconds. */
  now: number;
  ttlSeconds?: number;
  jti?: string;
}

/** RFC 8693 §4.1: `[a, b]` (newest first) as `{sub: a, act: {sub: b}}`. */
export function nestActors(actors: readonly string[]): { sub: string; act?: unknown } {
  return actors.reduceRight<{ sub: string; act?: unknown } | undefined>(
    (inner, sub) => (inner ? { sub, act: inner } : { sub }),
    undefined,
  )!;
}

/** Signs an assertion (ES256) for one upstream request. */
export async function buildUpstreamAssertion(input: AssertionInput, key: AssertionKey): Promise<string> {
  const ttl = Math.min(input.ttlSeconds ?? 60, MAX_ASSERTION_SECONDS);
  if (!(ttl > 0)) throw new RangeError('ttlSeconds must be positive');
  const iat = Math.floor(input.now / 1000);
  const claims: Record<string, unknown> = {
    principal_type: input.principalType,
    assurance: input.assurance,
    acr: input.assurance,
  };
  if (input.email) claims['email'] = input.email;
  if (input.orgs) claims['orgs'] = input.orgs.map(({ slug, role }) => ({ slug, role }));
  if (input.groups) claims['groups'] = [...input.groups];
  if (input.idp) {
    claims['idp'] = input.idp.id;
    claims['idp_name'] = input.idp.name;
  }
  if (input.actors?.length) claims['act'] = nestActors(input.actors);
  return signJwt(
    { kid: key.kid, typ: ASSERTION_TYP },
    {
      ...claims,
      iss: input.issuer,
      aud: input.audience,
      sub: input.subject,
      iat,
      exp: iat + ttl,
      jti: input.jti ?? randomToken(16),
    },
    key.privateKey,
    'ES256',
  );
}
