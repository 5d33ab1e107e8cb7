import { fail } from '../errors/keyplane-error.js';

/**
 * Account preferences (theme, lang, contrast, motion, text, email; docs/accounts.md), merged key by
 * key: a key in the update replaces that key, `null` removes it, absent keys stay as they were.
 */
export type Preferences = Partial<Record<PreferenceKey, string>>;

export const PREFERENCE_VALUES = {
  theme: ['system', 'light', 'dark'],
  contrast: ['normal', 'more', 'less'],
  motion: ['full', 'reduce'],
  text: ['normal', 'large', 'larger'],
  email: ['all', 'security', 'none'],
  // lang is a BCP 47 tag, checked by pattern below
  lang: null,
} as const;

export type PreferenceKey = keyof typeof PREFERENCE_VALUES;

const LANG_TAG = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,4}$/;

function isPreferenceKey(key: string): key is PreferenceKey {
  return Object.prototype.hasOwnProperty.call(PREFERENCE_VALUES, key);
}

/** Returns `current` with `update` merged in; throws `invalid_preferences` on an unknown key or value. */
export function mergePreferences(current: Preferences, update: unknown): Preferences {
  if (update === null || typeof update !== 'object' || Array.isArray(update))
    throw fail('invalid_preferences', 'preferences must be an object');
  const next: Preferences = { ...current };
  for (const [key, value] of Object.entries(update as Record<string, unknown>)) {
    if (!isPreferenceKey(key))
      throw fail(
        'invalid_preferences',
        `unknown preference "${key.slice(0, 32)}"; known: ${Object.keys(PREFERENCE_VALUES).join(', ')}`,
      );
    if (value === null) {
      delete next[key];
      continue;
    }
    const allowed = PREFERENCE_VALUES[key];
    const valid =
      typeof value === 'string' &&
      (allowed === null ? LANG_TAG.test(value) : (allowed as readonly string[]).includes(value));
    if (!valid) {
      throw fail(
        'invalid_preferences',
        allowed === null
          ? `${key} must be a language tag such as "en" or "pt-BR"`
          : `${key} must be one of: ${allowed.join(', ')}`,
      );
    }
    next[key] = value as string;
  }
  return next;
}
