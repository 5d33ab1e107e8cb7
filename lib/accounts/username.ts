import { fail } from '../errors/keyplane-error.js';

/**
 * Usernames are case-folded (Unicode NFKC, then lower case) and must then match
 * `^[a-z0-9][a-z0-9._-]{2,31}$`: 3 to 32 characters, starting with a letter or digit.
 * Uniqueness is on the folded form, so `Ada` and `ada` are the same name.
 */
export const USERNAME_PATTERN = /^[a-z0-9][a-z0-9._-]{2,31}$/;

/** The folded form used for uniqueness and look-ups. */
export function foldUsername(raw: string): string {
  return raw.normalize('NFKC').trim().toLowerCase();
}

/** Folds `raw` and checks it against the pattern; throws `invalid_username` otherwise. */
export function checkUsername(raw: unknown): string {
  if (typeof raw !== 'string') throw fail('invalid_username', 'a username is required');
  const folded = foldUsername(raw);
  if (!USERNAME_PATTERN.test(folded)) {
    throw fail(
      'invalid_username',
      'usernames are 3 to 32 characters: letters, digits, dot, dash or underscore, starting with a letter or digit',
    );
  }
  return folded;
}

export const DISPLAY_NAME_MAX = 64;
export const PASSKEY_LABEL_MAX = 64;

/** Trims a free-text name and refuses control characters and anything longer than `max`. */
export function checkFreeText(
  raw: unknown,
  max: number,
  reason: 'display_name_invalid' | 'label_invalid' | 'invalid_request',
  what: string,
): string {
  if (typeof raw !== 'string') throw fail(reason, `${what} must be a string`);
  const value = raw.normalize('NFC').trim();
  if (/[\u0000-\u001f\u007f]/.test(value)) throw fail(reason, `${what} may not contain control characters`);
  if ([...value].length > max) throw fail(reason, `${what} is longer than ${max} characters`);
  if (reason === 'label_invalid' && value.length === 0) throw fail(reason, `${what} may not be empty`);
  return value;
}
