import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The `keyplane …` example commands of README.md and docs/*.md, found one way for the suite that
 * parses them all (test/cli/doc-examples.test.ts) and for the suites that run them: a suite asks
 * for an example by its text with `docCommand(file, command, values)`, so what it runs is what the
 * page shows, with only the placeholders the page names replaced by the test's own values.
 */
export interface DocExample {
  file: string;
  /** The line the example starts on (1-based). */
  line: number;
  /** The invocation as the page shows it, from `keyplane` on (`\` continuations joined, a `# comment` dropped). */
  command: string;
  /** Variables set before it on the same line (`KEYPLANE_MASTER_KEY=… keyplane …`), as written. */
  prefix: string;
  /** In a prose code span, not a code block. */
  inline: boolean;
  /** The headings above it, outermost first. */
  headings: string[];
  /** On a `$ ` line of a block marked `<!-- transcript: NAME -->` (test/helpers/doc-transcript.ts). */
  transcript: boolean;
}

export const DOC_FILES = ['README.md', ...readdirSync('docs').map((name) => join('docs', name))].filter((file) =>
  file.endsWith('.md'),
);

interface Line {
  text: string;
  line: number;
  inline: boolean;
  headings: string[];
  transcript: boolean;
}

/**
 * The lines a page shows commands on: lines of fenced code blocks (with `\` continuations joined),
 * and code spans in its prose paragraphs that start with `keyplane ` (a span may wrap a line).
 */
function codeLines(markdown: string): Line[] {
  const lines: Line[] = [];
  const headings: string[] = [];
  let block: { transcript: boolean } | undefined;
  let pending: { text: string; line: number } | undefined;
  let paragraph: { text: string; line: number } | undefined;
  let marker = false;
  const flush = () => {
    if (!paragraph) return;
    for (const match of paragraph.text.matchAll(/`((?:npx )?keyplane [^`]+)`/g)) {
      const before = paragraph.text.slice(0, match.index);
      lines.push({
        text: match[1]!.replace(/\s+/g, ' '),
        line: paragraph.line + (before.match(/\n/g)?.length ?? 0),
        inline: true,
        headings: [...headings],
        transcript: false,
      });
    }
    paragraph = undefined;
  };
  markdown.split('\n').forEach((raw, index) => {
    const number = index + 1;
    if (/^\s*```/.test(raw)) {
      flush();
      block = block ? undefined : { transcript: marker && /^\s*```console/.test(raw) };
      pending = undefined;
      marker = false;
      return;
    }
    if (!block) {
      const heading = /^(#+) (.*)$/.exec(raw);
      if (heading) {
        flush();
        const level = heading[1]!.length;
        headings.length = Math.min(headings.length, level - 1);
        while (headings.length < level - 1) headings.push('');
        headings.push(heading[2]!);
        return;
      }
      if (/^<!-- transcript: \S+ -->$/.test(raw.trim())) marker = true;
      else if (raw.trim() !== '') marker = false;
      // README's table rows are synopses checked by reference.test.ts; a blank line ends a paragraph.
      if (raw.startsWith('|') || raw.trim() === '') return flush();
      paragraph = paragraph ? { ...paragraph, text: `${paragraph.text}\n${raw}` } : { text: raw, line: number };
      return;
    }
    const text = (pending?.text ?? '') + raw.trim();
    const line = pending?.line ?? number;
    if (text.endsWith('\\')) {
      pending = { text: `${text.slice(0, -1).trimEnd()} `, line };
      return;
    }
    pending = undefined;
    lines.push({ text, line, inline: false, headings: headings.filter(Boolean), transcript: block.transcript });
  });
  flush();
  return lines.map((entry) => ({ ...entry, headings: entry.headings.filter(Boolean) }));
}

const VARIABLES = /^(?:[A-Z_]+=(?:"[^"]*"|'[^']*'|<[^>]*>|\S+)\s+)*/;
const RUNNER = /^(?:npx\s+|node\s+\S*main\.js\s+|\.\/node_modules\/\.bin\/)?/;

/** The `keyplane` invocations on one line (after a prompt, in a chain, in the background, before a pipe or redirect). */
function invocations(line: string): { prefix: string; command: string }[] {
  const text = line.replace(/^\$\s+/, '').replace(/\s#\s.*$/, '');
  return (
    text
      .split(/\s(?:&&|\|\||;|&)(?:\s|$)/)
      // `<the client id>` is a placeholder, not a redirect.
      .map((part) => part.split(/\s\|\s|\s\d?>>?\s?|\s<(?![^<>]*>)/)[0]!.trim())
      .map((part) => {
        const prefix = VARIABLES.exec(part)![0];
        const rest = part.slice(prefix.length);
        return { prefix: prefix.trim(), command: rest.slice(RUNNER.exec(rest)![0].length) };
      })
      .filter(({ command }) => /^keyplane(\s|$)/.test(command))
  );
}

/** Every example command of the docs, in page order. */
export function docExamples(): DocExample[] {
  return DOC_FILES.flatMap((file) =>
    codeLines(readFileSync(file, 'utf8')).flatMap(({ text, line, inline, headings, transcript }) =>
      invocations(text).map(({ prefix, command }) => ({ file, line, command, prefix, inline, headings, transcript })),
    ),
  );
}

/** Shell words of one command: quotes removed, `$VAR`/`$(…)` kept (`$(…)` as one word `SUBST`). */
export function shellWords(command: string): string[] {
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

/**
 * A synopsis (`keyplane a b|c --control-plane URL [--json] [--wait N]`) as the command it shows:
 * optional parts taken, the first of alternatives, `…` (more of the same) dropped.
 */
export function synopsisWords(words: string[]): string[] {
  return words
    .map((word) => word.replace(/^\[+|\]+$/g, ''))
    .map((word) => (word.includes('|') && !word.startsWith('-') ? word.split('|')[0]! : word))
    .filter((word) => word !== '…' && word !== '...' && word !== '');
}

/** A word that still holds a placeholder of the page: `URL`, `ID`, `cl_…`, `$ISSUER`, `<the secret>`, `$(date …)`. */
const PLACEHOLDER = /^[A-Z][A-Z0-9_-]*…?$|…|^\$|<[^>]*>|SUBST/;

export interface RunnableCommand {
  /** The arguments after `keyplane`. */
  args: string[];
  /** The variables the page sets before it, with their values substituted. */
  env: Record<string, string>;
  /** The whole line with the values substituted, for a shell. */
  shell: string;
}

/**
 * The example of `file` whose text is `command`, with each key of `values` (a placeholder the page
 * writes: `$ISSUER`, `http://localhost:4400`, `cl_…`, `URL`) replaced by its value, in order. Throws
 * when the page no longer shows the command or when a placeholder is left without a value, so a
 * suite cannot run something else than the page shows. test/cli/doc-examples.test.ts finds these
 * calls to tell which suite runs which example.
 */
export function docCommand(file: string, command: string, values: Record<string, string> = {}): RunnableCommand {
  const example = docExamples().find((candidate) => candidate.file === file && candidate.command === command);
  if (!example) throw new Error(`${file} shows no example "${command}"`);
  let text = example.prefix ? `${example.prefix} ${example.command}` : example.command;
  for (const [placeholder, value] of Object.entries(values)) {
    if (!text.includes(placeholder)) throw new Error(`"${placeholder}" is not in ${file}: ${command}`);
    // Whole words only for bare capitals (`ID` must not hit `--client-id ID`'s flag, `N` not `NAME`).
    text = /^[A-Z][A-Z0-9_]*$/.test(placeholder)
      ? text.replace(new RegExp(`(?<![\\w-])${placeholder}(?![\\w-])`, 'g'), () => value)
      : text.replaceAll(placeholder, () => value);
  }
  const words = shellWords(text);
  const env: Record<string, string> = {};
  while (words[0] && /^[A-Z_]+=/.test(words[0])) {
    const [name, ...rest] = words.shift()!.split('=');
    env[name!] = rest.join('=');
  }
  const args = synopsisWords(words.slice(1));
  const left = [...Object.values(env), ...args].filter((word) => PLACEHOLDER.test(word));
  if (left.length > 0) throw new Error(`${file}: ${command}: no value for ${left.join(', ')}`);
  return { args, env, shell: text };
}
