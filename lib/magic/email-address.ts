/** Longest address SMTP can carry (RFC 5321 §4.5.3.1.3 path limit less the brackets). */
export const EMAIL_MAX = 254;

/**
 * The canonical form Keyplane stores and looks addresses up by: trimmed and lower-cased as a
 * whole (RFC 5321 lets the local part be case-sensitive, but no mainstream provider is, and two
 * rows for `Ada@` and `ada@` would split one mailbox across accounts). Null when the value is not
 * a plausible address: one `@`, a local part of 1–64 characters, a dotted domain, no spaces,
 * quotes, brackets or control characters.
 */
export function normalizeEmailAddress(raw: string): string | null {
  const value = raw.trim().toLowerCase();
  if (value.length > EMAIL_MAX) return null;
  const match =
    /^([^\s@"<>()[\],;:\\\u0000-\u001f\u007f]{1,64})@([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+)$/.exec(
      value,
    );
  return match ? value : null;
}
