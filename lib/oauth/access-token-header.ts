/**
 * Reads the access token of a protected-resource request: `Authorization: Bearer <token>`
 * (RFC 6750 §2.1) or `Authorization: DPoP <token>` (RFC 9449 §7.1). Scheme names are
 * case-insensitive; the token has the b64token syntax. Null when absent or malformed.
 */
export function readAccessToken(
  authorization: string | undefined,
): { scheme: 'Bearer' | 'DPoP'; token: string } | null {
  if (authorization === undefined) return null;
  const match = /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*)$/i.exec(authorization.trim());
  if (!match) return null;
  return { scheme: match[1]!.toLowerCase() === 'dpop' ? 'DPoP' : 'Bearer', token: match[2]! };
}

/**
 * RFC 6750 §2.2: the access token as the `access_token` member of a form-encoded POST body.
 * Undefined when the request carries none that way; null when it carries one that is not a
 * single token.
 */
export function readBodyAccessToken(
  method: string,
  contentType: string | undefined,
  body: unknown,
): string | null | undefined {
  if (method !== 'POST' || !/^application\/x-www-form-urlencoded\b/i.test(contentType ?? '')) return undefined;
  if (typeof body !== 'object' || body === null) return undefined;
  const value = (body as Record<string, unknown>).access_token;
  if (value === undefined) return undefined;
  return typeof value === 'string' && /^[A-Za-z0-9\-._~+/]+=*$/.test(value) && value.length <= 8192 ? value : null;
}

export type BindingProblem = 'bearer_for_bound_token' | 'dpop_for_unbound_token' | null;

/**
 * RFC 9449 §7.2: a DPoP-bound token (one with `cnf.jkt`) presented under `Bearer` is a
 * downgrade and must be refused; a token without `cnf.jkt` sent under `DPoP` is refused too,
 * so the scheme always tells the truth about the token.
 */
export function checkTokenScheme(scheme: 'Bearer' | 'DPoP', boundJkt: string | undefined): BindingProblem {
  if (boundJkt !== undefined && scheme !== 'DPoP') return 'bearer_for_bound_token';
  if (boundJkt === undefined && scheme === 'DPoP') return 'dpop_for_unbound_token';
  return null;
}

/** True when `value` looks like an RFC 7638 SHA-256 thumbprint (the `dpop_jkt` parameter). */
export function isJwkThumbprint(value: unknown): value is string {
  return typeof value === 'string' && /^[A-Za-z0-9_-]{43}$/.test(value);
}
