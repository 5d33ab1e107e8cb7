import t from 'tap';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { buildProgram } from '../../cli/src/program.js';
import { docCommand, docExamples, shellWords, synopsisWords, type DocExample } from '../helpers/doc-examples.js';
import { listTestFiles } from '../tiers/tiers.mjs';

/**
 * Every `keyplane …` command shown in README.md or docs/*.md (test/helpers/doc-examples.ts finds
 * them) is one the CLI takes as written, and one that a suite runs (docs/cli.md#every-example-runs).
 *
 * Parsing: the command exists, every flag is one it knows, and its arguments and option values
 * parse (a usage error is exit 2, what `gateway explain` as documented once answered). The actions
 * are replaced by no-ops, so nothing runs here.
 *
 * Running: a suite runs an example when its source asks for it with `docCommand(file, command)`
 * (it runs what that returns), reads the code blocks of the example's section with
 * `codeBlocksUnder(file, heading)` and runs them in a shell, or checks the transcript block the
 * example's `$ ` line stands in with `transcript.checkGuide(t, file)` (the command recorded is the
 * one run). An example no suite runs fails here, and so does a `docCommand` naming no example.
 */

const examples = docExamples();

/** A synopsis checked as the command it shows: a placeholder as a value (`N` a number). */
function asWritten(example: DocExample): string[] {
  // `<the client id>` is one placeholder, spaces and all.
  return synopsisWords(shellWords(example.command.replace(/<[^<>]*>/g, 'x')).slice(1))
    .map((word) => (/^[A-Z][A-Z0-9_-]*…$/.test(word) ? word.slice(0, -1) : word))
    .map((word) => (word === 'N' ? '1' : /^<.+>$|^[A-Z][A-Z0-9_-]*$/.test(word) ? 'x' : word));
}

/** The program with every action replaced by one that records which command would run. */
function dryProgram(): { program: Command; ran: string[]; errors: string[] } {
  const ran: string[] = [];
  const errors: string[] = [];
  const program = buildProgram({
    stdout: () => undefined,
    stderr: (text: string) => void errors.push(text),
  } as unknown as Parameters<typeof buildProgram>[0]);
  const walk = (command: Command, path: string[]) => {
    for (const sub of command.commands) {
      const here = [...path, sub.name()];
      if ((sub as unknown as { _actionHandler: unknown })._actionHandler)
        sub.action(() => void ran.push(here.join(' ')));
      walk(sub, here);
    }
  };
  walk(program, []);
  return { program, ran, errors };
}

/** True when `words` only name a command (`keyplane accounts disable` in a sentence): a name, not an example. */
function onlyNames(words: string[], program: Command): boolean {
  let command = program;
  for (const word of words) {
    const sub = command.commands.find((candidate) => candidate.name() === word);
    if (!sub) return false;
    command = sub;
  }
  return true;
}

const names = buildProgram();
const shown = examples
  .map((example) => ({ example, words: asWritten(example) }))
  .filter(({ words }) => words.length > 0 && !words.includes('--help'))
  // In prose, `keyplane accounts disable` names a command and `keyplane <command>` stands for any.
  .filter(
    ({ example, words }) => !(example.inline && (onlyNames(words, names) || /^keyplane </.test(example.command))),
  );

/** A JavaScript string literal's value (the suites are formatted by prettier: one line, either quote). */
const literal = String.raw`('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")`;
const unquote = (text: string) => text.slice(1, -1).replace(/\\(.)/g, '$1');

/** What each suite runs: `docCommand` calls, `codeBlocksUnder` sections, `checkGuide` transcripts. */
// This file's own docCommand calls test its refusals; they run nothing.
const suites = listTestFiles()
  .filter((file) => file !== 'test/cli/doc-examples.test.ts')
  .map((file) => {
    const source = readFileSync(file, 'utf8');
    const calls = (name: string) =>
      [...source.matchAll(new RegExp(String.raw`${name}\(\s*${literal}\s*,\s*${literal}`, 'g'))].map((m) => ({
        file: unquote(m[1]!),
        text: unquote(m[2]!),
      }));
    return {
      file,
      commands: calls('docCommand'),
      sections: calls('codeBlocksUnder'),
      transcripts: [...source.matchAll(new RegExp(String.raw`checkGuide\(\s*\w+\s*,\s*${literal}`, 'g'))].map((m) =>
        unquote(m[1]!),
      ),
    };
  });

function runners(example: DocExample): string[] {
  return suites
    .filter(
      (suite) =>
        suite.commands.some((call) => call.file === example.file && call.text === example.command) ||
        (!example.inline &&
          suite.sections.some((call) => call.file === example.file && example.headings.includes(call.text))) ||
        (example.transcript && suite.transcripts.includes(example.file)),
    )
    .map((suite) => suite.file);
}

if (process.env['KEYPLANE_LIST_EXAMPLES'])
  for (const { example, words } of shown)
    console.log(`${example.file}:${example.line}`, words.join(' '), '←', runners(example).join(' ') || 'NOT RUN');

t.test('the docs show keyplane commands', async (t) => {
  t.ok(shown.length >= 40, `${shown.length} example commands found`);
});

t.test('every example command in the docs parses as written', async (t) => {
  for (const { example, words } of shown) {
    const where = `${example.file}:${example.line}: keyplane ${words.join(' ')}`;
    const { program, ran, errors } = dryProgram();
    let failure: string | undefined;
    try {
      await program.parseAsync(words, { from: 'user' });
    } catch (error) {
      // `--version` ends the parse by printing the version, as it should.
      if ((error as { code?: string }).code !== 'commander.version') failure = (error as Error).message;
      else ran.push('--version');
    }
    t.equal(failure, undefined, `${where}${errors.length ? `\n${errors.join('')}` : ''}`);
    if (failure === undefined) t.equal(ran.length, 1, `${where} names a command`);
  }
});

t.test('every example command in the docs runs in a suite', async (t) => {
  for (const { example } of shown)
    t.not(runners(example).length, 0, `${example.file}:${example.line}: ${example.command}`);
});

t.test('every docCommand a suite asks for is one the docs show', async (t) => {
  for (const suite of suites)
    for (const call of suite.commands)
      t.ok(
        examples.some((example) => example.file === call.file && example.command === call.text),
        `${suite.file}: ${call.file}: ${call.text}`,
      );
});

t.test('docCommand refuses an example the page does not show and a placeholder left without a value', async (t) => {
  t.throws(
    () => docCommand('docs/apis.md', 'keyplane apis list'),
    /docs\/apis\.md shows no example "keyplane apis list"/,
  );
  t.throws(() => docCommand('docs/apis.md', 'keyplane apis list --control-plane "$ISSUER"'), /no value for \$ISSUER/);
  t.throws(
    () => docCommand('docs/apis.md', 'keyplane apis list --control-plane "$ISSUER"', { $ISSUR: 'x' }),
    /"\$ISSUR" is not in docs\/apis\.md/,
  );
  t.same(docCommand('docs/apis.md', 'keyplane apis list --control-plane "$ISSUER"', { $ISSUER: 'http://x' }), {
    args: ['apis', 'list', '--control-plane', 'http://x'],
    env: {},
    shell: 'keyplane apis list --control-plane "http://x"',
  });
  t.same(
    docCommand('docs/ledger.md', 'keyplane ledger rotate-note-key [--overlap-days N]', { N: '3' }).args,
    ['ledger', 'rotate-note-key', '--overlap-days', '3'],
    "a synopsis's optional part is taken",
  );
});
