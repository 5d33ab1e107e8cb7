import t from 'tap';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Docs that stay true: every `docs/<file>.md#anchor` cited in code, tests, config and docs, and
 * every relative markdown link with an anchor, names a heading (GitHub's slug) or an explicit
 * `<a id>` of that file; the README's documentation list names each file of docs/ once.
 */

const ROOT = process.cwd();
const SKIP = new Set(['node_modules', 'dist', '.git', '.tap', 'coverage', 'data', 'fixtures']);

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (/\.(ts|md|mjs|js|ya?ml|sh)$/.test(name)) out.push(path);
  }
  return out;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const slug = heading[1]!
        .replace(/<[^>]+>/g, '')
        .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/ /g, '-');
      const repeat = seen.get(slug) ?? 0;
      seen.set(slug, repeat + 1);
      anchors.add(repeat ? `${slug}-${repeat}` : slug);
    }
    for (const explicit of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(explicit[1]!);
  }
  return anchors;
}

t.test('the slugs follow GitHub', async (t) => {
  t.same(
    [...anchorsOf('# A b\n## 10.1 Back-channel logout\n```\n# not a heading\n```\n### A b\n<a id="x"></a>')],
    ['a-b', '101-back-channel-logout', 'a-b-1', 'x'],
  );
});

t.test('every cited docs anchor resolves', async (t) => {
  const cache = new Map<string, Set<string> | null>();
  const anchorsIn = (file: string) => {
    if (!cache.has(file)) {
      try {
        cache.set(file, anchorsOf(readFileSync(file, 'utf8')));
      } catch {
        cache.set(file, null);
      }
    }
    return cache.get(file)!;
  };
  const broken: string[] = [];
  let checked = 0;
  for (const file of sourceFiles(ROOT)) {
    const text = readFileSync(file, 'utf8');
    const markdown = file.endsWith('.md');
    const citations: Array<[string, string]> = [];
    for (const m of text.matchAll(/(?<![\w/.-])(docs\/[\w.-]+\.md)#([\w-]+)/g))
      citations.push([join(ROOT, m[1]!), m[2]!]);
    if (markdown)
      for (const m of text.matchAll(/\]\(([^)\s#]*\.md)?#([^)\s]+)\)/g))
        citations.push([m[1] ? resolve(dirname(file), m[1]) : file, decodeURIComponent(m[2]!)]);
    for (const [target, anchor] of citations) {
      checked += 1;
      const anchors = anchorsIn(target);
      if (!anchors?.has(anchor)) broken.push(`${relative(ROOT, file)} cites ${relative(ROOT, target)}#${anchor}`);
    }
  }
  t.ok(checked > 50, `${checked} citations checked`);
  t.same(broken, [], 'each names a heading of its file');
});

t.test("the README's documentation list names each doc once", async (t) => {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('## Documentation'));
  const listed = [...section.matchAll(/^- \[docs\/([\w.-]+\.md)\]/gm)].map((m) => m[1]!);
  t.same([...listed].sort(), [...new Set(listed)].sort(), 'no doc twice');
  t.same(new Set(listed), new Set(readdirSync('docs').filter((name) => name.endsWith('.md'))), 'every doc');
});
