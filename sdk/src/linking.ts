/**
 * Account linking (Keyplane docs/oidc.md §12): `(iss, sub)` is the only join key; an email is a
 * linkable fact only when `email_verified` is exactly the boolean `true`.
 */
export interface AccountKey {
  iss: string;
  sub: string;
}

export function accountKey(claims: Record<string, unknown>): AccountKey {
  if (typeof claims.iss !== 'string' || typeof claims.sub !== 'string')
    throw new TypeError('claims need string iss and sub');
  return { iss: claims.iss, sub: claims.sub };
}

/**
 * The email an existing local account may be linked by, or null. Only for a one-time migration
 * of an authenticated legacy account: never merge accounts silently on it.
 */
export function linkableEmail(claims: Record<string, unknown>): string | null {
  if (claims.email_verified !== true) return null;
  return typeof claims.email === 'string' && claims.email.includes('@') ? claims.email : null;
}
