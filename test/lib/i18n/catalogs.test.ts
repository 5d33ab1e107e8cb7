/**
 * Completeness of the message catalogs (docs/i18n.md): every language has every key of the English
 * source and no other, every reason has its page text, each translation keeps its source's
 * placeholders and tags, every key is used in the source, and keys are literal everywhere but under
 * the declared dynamic prefixes.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse, TYPE, type MessageFormatElement } from '@formatjs/icu-messageformat-parser';
import { LOCALES, SOURCE_LOCALE } from '#lib/i18n/locales.js';
import { CATALOGS, DYNAMIC_KEY_PREFIXES } from '#lib/i18n/translate.js';
import { REASONS } from '#lib/errors/reasons.js';
import { SCRIPT_REASONS } from '../../../control-plane/src/pages/script-reasons.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const SOURCE_DIRS = ['lib', 'control-plane/src', 'gateway/src'];
const source = CATALOGS[SOURCE_LOCALE];
const sourceKeys = Object.keys(source).sort();

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** Argument names (with their kind) and tag names a message uses, however deeply nested. */
function placeholders(elements: MessageFormatElement[], into = new Set<string>()): Set<string> {
  for (const element of elements) {
    if (element.type === TYPE.argument) into.add(`{${element.value}}`);
    if (element.type === TYPE.number || element.type === TYPE.date || element.type === TYPE.time)
      into.add(`{${element.value}}`);
    if (element.type === TYPE.plural || element.type === TYPE.select) {
      into.add(`{${element.value}}`);
      for (const option of Object.values(element.options)) placeholders(option.value, into);
    }
    if (element.type === TYPE.tag) {
      into.add(`<${element.value}>`);
      placeholders(element.children, into);
    }
  }
  return into;
}

/** Literal text only: translators write no HTML (tags are rendered by the code, values escaped). */
function literals(elements: MessageFormatElement[], into: string[] = []): string[] {
  for (const element of elements) {
    if (element.type === TYPE.literal) into.push(element.value);
    if (element.type === TYPE.plural || element.type === TYPE.select)
      for (const option of Object.values(element.options)) literals(option.value, into);
    if (element.type === TYPE.tag) literals(element.children, into);
  }
  return into;
}

const parsed = (message: string) => parse(message, { requiresOtherClause: true });

t.test('every language has exactly the keys of the English source', async (t) => {
  for (const locale of LOCALES) {
    const keys = Object.keys(CATALOGS[locale]).sort();
    t.same(
      sourceKeys.filter((k) => !keys.includes(k)),
      [],
      `${locale}: missing keys`,
    );
    t.same(
      keys.filter((k) => !sourceKeys.includes(k)),
      [],
      `${locale}: keys English does not have`,
    );
  }
});

t.test('every translation parses and keeps the placeholders and tags of its source', async (t) => {
  for (const key of sourceKeys) {
    const expected = [...placeholders(parsed(source[key]!))].sort();
    for (const locale of LOCALES) {
      const message = CATALOGS[locale][key];
      if (message === undefined) continue;
      const elements = parsed(message);
      const found = [...placeholders(elements)].sort();
      if (JSON.stringify(found) !== JSON.stringify(expected))
        t.fail(`${locale} ${key}: placeholders ${found.join(' ')} instead of ${expected.join(' ')}`);
      const names = found.map((p) => p.slice(1, -1));
      if (new Set(names).size !== names.length)
        t.fail(`${locale} ${key}: a tag named like a value (${found.join(' ')})`);
      const html = literals(elements).find((text) => /[<>&"]/.test(text));
      if (html !== undefined) t.fail(`${locale} ${key}: literal HTML characters in "${html}"`);
      if (message.trim() === '') t.fail(`${locale} ${key}: empty`);
    }
  }
  t.pass('checked');
});

const files = SOURCE_DIRS.flatMap((dir) => tsFiles(join(ROOT, dir)));
const text = files.map((file) => readFileSync(file, 'utf8')).join('\n');

t.test('every key is used in the source, as a literal', async (t) => {
  const literalsInSource = new Set([...text.matchAll(/['"`]([a-z0-9_]+(?:\.[a-z0-9_]+)+)['"`]/g)].map((m) => m[1]));
  const unused = sourceKeys.filter(
    (key) => !literalsInSource.has(key) && !DYNAMIC_KEY_PREFIXES.some((prefix) => key.startsWith(prefix)),
  );
  t.same(unused, [], 'keys no source file names');
});

t.test('a dynamic key (a cast to MessageKey) appears only where the declared prefixes are built', async (t) => {
  const casting = files.filter((file) => /as MessageKey\b/.test(readFileSync(file, 'utf8')));
  t.same(
    casting.map((file) => file.slice(ROOT.length)),
    [],
    'files that build a message key at run time',
  );
});

t.test('every reason.* key names a reason that exists', async (t) => {
  const unknown = sourceKeys
    .filter((key) => key.startsWith('reason.'))
    .filter((key) => !Object.prototype.hasOwnProperty.call(REASONS, key.slice('reason.'.length)));
  t.same(unknown, []);
});

t.test('every reason has its page text (reason.<reason>) in every language', async (t) => {
  for (const locale of LOCALES) {
    const missing = Object.keys(REASONS).filter((reason) => CATALOGS[locale][`reason.${reason}`] === undefined);
    t.same(missing, [], `${locale}: reasons a refusal page would show in English`);
  }
});

t.test('every reason a page script can show is sent to it, in every language', async (t) => {
  const scriptsDir = join(ROOT, 'control-plane/src/pages/scripts');
  const scripts = readdirSync(scriptsDir).map((name) => readFileSync(join(scriptsDir, name), 'utf8'));
  const named = new Set(
    scripts
      .flatMap((source) => [...source.matchAll(/['"]([a-z0-9_]+)['"]/g)].map((m) => m[1]!))
      .filter((word) => Object.prototype.hasOwnProperty.call(REASONS, word)),
  );
  const sent = new Set<string>(SCRIPT_REASONS);
  t.same(
    [...named].filter((reason) => !sent.has(reason)),
    [],
    'reasons a script names that pages do not send it (control-plane/src/pages/script-reasons.ts)',
  );
  for (const locale of LOCALES) {
    const missing = SCRIPT_REASONS.filter((reason) => CATALOGS[locale][`reason.${reason}`] === undefined);
    t.same(missing, [], `${locale}: reasons a script would say in the generic line`);
  }
});
