import t from 'tap';
import { mergePreferences } from '#lib/accounts/preferences.js';
import { checkFreeText, checkUsername, foldUsername } from '#lib/accounts/username.js';
import { reasonOf } from '../../helpers/reason-of.js';

t.test('usernames are case-folded and match the documented pattern', async (t) => {
  t.equal(checkUsername('Ada'), 'ada');
  t.equal(checkUsername('  grace.hopper_1-x '), 'grace.hopper_1-x');
  t.equal(foldUsername('ＡＤＡ'), 'ada', 'NFKC folds full-width letters');
  for (const bad of ['ab', '-ada', '.ada', 'a'.repeat(33), 'ada lovelace', 'ada@example', 'ádá', '', 42]) {
    t.equal(
      reasonOf(() => checkUsername(bad)),
      'invalid_username',
      `refuses ${JSON.stringify(bad)}`,
    );
  }
  t.equal(checkUsername('a'.repeat(32)), 'a'.repeat(32), '32 characters is the limit');
});

t.test('free text is trimmed, bounded and free of control characters', async (t) => {
  t.equal(checkFreeText('  Ada Lovelace ', 64, 'display_name_invalid', 'x'), 'Ada Lovelace');
  t.equal(checkFreeText('', 64, 'display_name_invalid', 'x'), '', 'an empty display name clears it');
  t.equal(
    reasonOf(() => checkFreeText('', 64, 'label_invalid', 'x')),
    'label_invalid',
    'an empty label is refused',
  );
  t.equal(
    reasonOf(() => checkFreeText('x'.repeat(65), 64, 'label_invalid', 'x')),
    'label_invalid',
  );
  t.equal(
    reasonOf(() => checkFreeText('a\nb', 64, 'display_name_invalid', 'x')),
    'display_name_invalid',
  );
  t.equal(
    reasonOf(() => checkFreeText(5, 64, 'display_name_invalid', 'x')),
    'display_name_invalid',
  );
  t.equal(checkFreeText('😀'.repeat(64), 64, 'label_invalid', 'x').length, 128, 'counts characters, not UTF-16 units');
});

t.test('preferences merge key by key; null removes; unknown keys and values are refused', async (t) => {
  const start = mergePreferences({}, { theme: 'dark', lang: 'pt-BR' });
  t.same(start, { theme: 'dark', lang: 'pt-BR' });
  t.same(mergePreferences(start, { motion: 'reduce' }), { theme: 'dark', lang: 'pt-BR', motion: 'reduce' });
  t.same(mergePreferences(start, { theme: null, text: 'large', contrast: 'more', email: 'security' }), {
    lang: 'pt-BR',
    text: 'large',
    contrast: 'more',
    email: 'security',
  });
  t.equal(
    reasonOf(() => mergePreferences(start, { colour: 'red' })),
    'invalid_preferences',
  );
  t.equal(
    reasonOf(() => mergePreferences(start, { theme: 'neon' })),
    'invalid_preferences',
  );
  t.equal(
    reasonOf(() => mergePreferences(start, { lang: 'not a tag' })),
    'invalid_preferences',
  );
  t.equal(
    reasonOf(() => mergePreferences(start, [])),
    'invalid_preferences',
  );
  t.equal(
    reasonOf(() => mergePreferences(start, 'dark')),
    'invalid_preferences',
  );
  t.equal(
    reasonOf(() => mergePreferences(start, { __proto__: { theme: 'x' } } as unknown)),
    undefined,
    'prototype keys are not own keys',
  );
});
