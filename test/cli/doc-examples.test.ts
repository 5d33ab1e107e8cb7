import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../../cli/src/program.js';

/**
 * Every `keyplane …` command shown in a code block of README.md or docs/*.md is one the CLI takes
 * as written: the command exists, every flag is one it knows, and its arguments and option values
 * parse (a usage error is exit 2, what `gateway explain` as documented once answered). The
 * actions are replaced by no-ops, so nothing runs: the guides that run their commands for real
 * do so in their own suites (test/cli/*-guide, *-walkthrough, doc transcripts).
 */

const FILES = ['README.md', ...readdirSync('docs').map((name) => join('docs', name))].filter((file) =>
  file.endsWith('.md'),
);

/**
 * The commands a page shows: lines of fenced code blocks (with `\` continuations joined), and code
 * spans in its prose that start with `keyplane `.
 */
function codeLines(markdown: string): { line: string; inline: boolean }[] {
  const lines: { line: string; inline: boolean }[] = [];
  let inBlock = false;
  let pending = '';
  for (const raw of markdown.split('\n')) {
    if (/^\s*```/.test(raw)) {
      inBlock = !inBlock;
      pending = '';
      continue;
    }
    if (!inBlock) {
      // Headings name commands; README's table rows are synopses checked by reference.test.ts.
      if (!raw.startsWith('#') && !raw.startsWith('|'))
        lines.push(...[...raw.matchAll(/`((?:npx )?keyplane [^`]+)`/g)].map((m) => ({ line: m[1]!, inline: true })));
      continue;
    }
    const line = pending + raw.trim();
    if (line.endsWith('\\')) {
      pending = line.slice(0, -1) + ' ';
      continue;
    }
    pending = '';
    lines.push({ line, inline: false });
  }
  return lines;
}

/** Shell words of one command: quotes removed, `$VAR`/`$(…)` kept as one placeholder word. */
function shellWords(command: string): string[] {
  const words: string[] = [];
  let word = '';
  let quote: string | null = null;
  let inWord = false;
  for (let i = 0; i < command.length; i++) {
    const char = command[i]!;
    if (quote) {
      if (char === quote) quote = null;
      else word += char;
      continue;
    }
    if (char === '"' || char === "'") {
      quote = char;
      inWord = true;
      continue;
    }
    if (char === '$' && command[i + 1] === '(') {
      let depth = 0;
      for (; i < command.length; i++) {
        if (command[i] === '(') depth++;
        if (command[i] === ')' && --depth === 0) break;
      }
      word += 'SUBST';
      inWord = true;
      continue;
    }
    if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      continue;
    }
    word += char;
    inWord = true;
  }
  if (inWord) words.push(word);
  return words;
}

/** The `keyplane` invocations on one line (after a prompt, in a chain, before a pipe or redirect). */
function invocations(line: string): string[][] {
  const text = line.replace(/^\$\s+/, '').replace(/\s#\s.*$/, '');
  return text
    .split(/\s(?:&&|\|\||;)\s/)
    .map((part) => part.split(/\s\|\s|\s\d?>>?\s?|\s</)[0]!.trim())
    .map((part) => part.replace(/^(?:[A-Z_]+=\S+\s+)*(?:npx\s+|node\s+\S*main\.js\s+|\.\/node_modules\/\.bin\/)?/, ''))
    .filter((part) => /^keyplane(\s|$)/.test(part))
    .map((part) => shellWords(part).slice(1));
}

/**
 * A synopsis (`keyplane a b|c --control-plane URL [--json] [--wait N]`) is checked as the command it
 * shows: optional parts taken, the first of alternatives, a placeholder as a value (`N` a number).
 */
function asWritten(words: string[]): string[] {
  return words
    .map((word) => word.replace(/^\[|\]$/g, ''))
    .map((word) => (word.includes('|') && !word.startsWith('-') ? word.split('|')[0]! : word))
    .map((word) => (/^[A-Z][A-Z0-9_-]*…$/.test(word) ? word.slice(0, -1) : word))
    .map((word) => (word === 'N' ? '1' : /^<.+>$|^[A-Z][A-Z0-9_-]*$/.test(word) ? 'x' : word))
    .filter((word) => word !== '…' && word !== '...' && word !== '');
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
const examples = FILES.flatMap((file) =>
  codeLines(readFileSync(file, 'utf8')).flatMap(({ line, inline }) =>
    invocations(line)
      .map(asWritten)
      .filter((words) => words.length > 0 && !words.includes('--help'))
      .filter((words) => !(inline && onlyNames(words, names)))
      .map((words) => ({ file, words })),
  ),
);
if (process.env['KEYPLANE_LIST_EXAMPLES']) for (const { file, words } of examples) console.log(file, words.join(' '));

t.test('the docs show keyplane commands', async (t) => {
  t.ok(examples.length >= 40, `${examples.length} example commands found`);
});

t.test('every example command in the docs parses as written', async (t) => {
  for (const { file, words } of examples) {
    const { program, ran, errors } = dryProgram();
    let failure: string | undefined;
    try {
      await program.parseAsync(words, { from: 'user' });
    } catch (error) {
      // `--version` ends the parse by printing the version, as it should.
      if ((error as { code?: string }).code !== 'commander.version') failure = (error as Error).message;
      else ran.push('--version');
    }
    t.equal(failure, undefined, `${file}: keyplane ${words.join(' ')}${errors.length ? `\n${errors.join('')}` : ''}`);
    if (failure === undefined) t.equal(ran.length, 1, `${file}: keyplane ${words.join(' ')} names a command`);
  }
});
