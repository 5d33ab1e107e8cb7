import t from 'tap';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * docs/architecture.md stays true to the tree: every repo path it writes in backticks
 * (`control-plane/src/accounts/sign-in.ts`, `lib/webauthn/`, or short ones such as
 * `sessions/start-session.ts`, which the doc writes relative to control-plane/src/) exists, and so
 * does every path and file name of its Layout block.
 */

const DOC = 'docs/architecture.md';
/** Where a path may be rooted: the repository, or control-plane/src/ for the doc's short forms. */
const ROOTS = ['', 'control-plane/src/'];

/** A repo path as the doc writes one: segments with a slash, ending in a file extension or a slash. */
const PATH = /^[a-z0-9][\w.-]*(?:\/[\w.-]+)*(?:\/|\.(?:ts|js|mjs|json|md|sql|ya?ml|conf))$/;

function resolves(path: string): boolean {
  return ROOTS.some((root) => existsSync(join(root, path)));
}

/** The doc split into prose (fences removed) and the Layout block's lines. */
function parts(markdown: string): { prose: string; layout: string[] } {
  const prose: string[] = [];
  const layout: string[] = [];
  let fence: 'none' | 'layout' | 'other' = 'none';
  let section = '';
  for (const line of markdown.split('\n')) {
    if (line.startsWith('#')) section = line;
    if (/^(```|~~~)/.test(line)) {
      fence = fence !== 'none' ? 'none' : section === '## Layout' ? 'layout' : 'other';
      continue;
    }
    if (fence === 'layout') layout.push(line);
    else if (fence === 'none') prose.push(line);
  }
  return { prose: prose.join('\n'), layout };
}

function filesUnder(dir: string, out = new Set<string>()): Set<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) filesUnder(path, out);
    else out.add(name);
  }
  return out;
}

const { prose, layout } = parts(readFileSync(DOC, 'utf8'));

t.test('every repo path in backticks exists', async (t) => {
  const paths = [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!).filter((span) => PATH.test(span));
  t.ok(paths.length >= 15, `${paths.length} paths checked`);
  t.same(
    paths.filter((path) => !resolves(path)),
    [],
    `each exists from the repo root or control-plane/src/ (${DOC})`,
  );
});

t.test('the Layout block names paths and files that exist', async (t) => {
  t.ok(layout.length > 10, 'the Layout block is found');
  const missing: string[] = [];
  let dir = '';
  let checked = 0;
  for (const line of layout) {
    const entry = /^(\S+)\s/.exec(line)?.[1];
    if (entry && !/[<*]/.test(entry)) {
      checked += 1;
      if (!existsSync(entry)) missing.push(entry);
      dir = entry.endsWith('/') && existsSync(entry) ? entry : '';
    } else if (entry) dir = '';
    // Paths in a description (docs/cli.md#start-up), and bare file names, looked for under the entry's folder.
    for (const m of line.slice(entry ? entry.length : 0).matchAll(/[\w./-]+\.(?:ts|md)\b/g)) {
      const named = m[0];
      checked += 1;
      if (named.includes('/')) {
        if (!resolves(named)) missing.push(named);
      } else if (!dir || !filesUnder(dir).has(named)) missing.push(`${dir}…/${named}`);
    }
  }
  t.ok(checked >= 25, `${checked} names checked`);
  t.same(missing, [], `each exists (${DOC}, Layout)`);
});

t.test('the traced sign-in names functions that exist in the files it names', async (t) => {
  const traced = /### Traced[^\n]*\n([\s\S]*?)\n## /.exec(prose)?.[1];
  t.ok(traced, 'the traced example is found');
  const spans = [...traced!.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
  const files = spans
    .filter((span) => PATH.test(span) && span.endsWith('.ts'))
    .flatMap((path) => ROOTS.map((root) => join(root, path)).filter((file) => existsSync(file)));
  const code = files.map((file) => readFileSync(file, 'utf8')).join('\n');
  const words = new Set(code.match(/[A-Za-z_$][\w$]*/g));
  // `finishSignIn(services, body, browserOf(app.kp, reply))`, `tx.sessions.renewToken`, `openSession`.
  const named = spans
    .filter((span) => /^[A-Za-z_]\w*(?:\.\w+)*(?:\(.*\))?$/.test(span))
    .flatMap((span) => span.match(/[A-Za-z_]\w*/g)!);
  t.ok(named.length >= 20, `${named.length} names checked in ${files.length} files`);
  t.same([...new Set(named.filter((name) => !words.has(name)))], [], 'each is a word of the code the section names');
});
