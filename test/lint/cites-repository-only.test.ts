import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

// Comments and docs cite the repository, RFCs and public specs only: a reader of this tree has no
// other notes, so a rule is written out where it applies (its doc, its module) instead of pointed
// at by the name of a planning document. The names are built from parts so this file passes too.
const ROOT = process.cwd();
const TREES = ['lib', 'config', 'control-plane', 'gateway', 'cli', 'sdk', 'test', 'bench', 'docs', 'deploy'];
const FILES = ['README.md', 'CHANGELOG.md', 'eslint.config.js', 'package.json'];
const SKIPPED = new Set(['node_modules', 'dist', '.tap', 'coverage', 'data']);
const NOTE_NAMES = ['contract', 'design', 'style'].map((name) => name.toUpperCase());
const PLANNING_NOTES = new RegExp(`\\b(${NOTE_NAMES.join('|')})(\\.md)?\\b`);

function walk(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (SKIPPED.has(entry)) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) found.push(...walk(path));
    else if (/\.(ts|mts|js|mjs|md|py|sh|yaml|yml|json|html|conf)$/.test(entry)) found.push(path);
  }
  return found;
}

t.test('no line of code or docs names a planning note instead of saying the rule', async (t) => {
  const files = [...TREES.flatMap((tree) => walk(join(ROOT, tree))), ...FILES.map((file) => join(ROOT, file))];
  const offending: string[] = [];
  for (const file of files) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        if (PLANNING_NOTES.test(line)) offending.push(`${file.slice(ROOT.length + 1)}:${index + 1}: ${line.trim()}`);
      });
  }
  t.ok(files.length > 500, 'the walk saw the tree');
  t.same(offending, []);
});

t.test('the pattern finds a note named in a comment', async (t) => {
  t.ok(PLANNING_NOTES.test(`// see ${NOTE_NAMES[0]}.md, "Access rules"`));
  t.ok(PLANNING_NOTES.test(`(${NOTE_NAMES[1]}, Wave 3)`));
  t.notOk(PLANNING_NOTES.test('const contractView = view; // DESIGNATED'));
});
