import { oauthError } from './errors.js';

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), separated by single spaces. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Scopes this provider knows: openid, email, profile, orgs, groups, offline_access (docs/oidc.md). */
export const SUPPORTED_SCOPES = ['openid', 'email', 'profile', 'orgs', 'groups', 'offline_access'] as const;

/** Scopes that release memberships: granted only to a client that registered them by name. */
export const REGISTERED_BY_NAME_SCOPES: readonly string[] = ['orgs', 'groups'];

/**
 * Splits a `scope` parameter into its tokens, in order, without duplicates. An absent or empty
 * value is the empty list. Malformed syntax (double spaces, leading or trailing spaces, a
 * forbidden character) throws `invalid_scope`.
 */
export function parseScope(value: unknown): string[] {
  if (value === undefined || value === null || value === '') return [];
  if (typeof value !== 'string') throw oauthError('invalid_scope', 'scope must be a space-separated string');
  const tokens = value.split(' ');
  if (tokens.some((token) => !SCOPE_TOKEN.test(token))) {
    throw oauthError('invalid_scope', 'scope has a malformed token');
  }
  return [...new Set(tokens)];
}

/** Joins scope tokens with single spaces (the `scope` claim and parameter form). */
export function formatScope(scopes: readonly string[]): string {
  return [...new Set(scopes)].join(' ');
}
