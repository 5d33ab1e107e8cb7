import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

// No module imports itself through others (docs/architecture.md#layout): a circle, even of types
// only, means two files that cannot be read, tested or moved apart. Every import counts, static,
// type-only and `import()`, as written in the source.
const ROOT = process.cwd();
const TREES = ['lib', 'config', 'control-plane/src', 'gateway/src', 'cli/src', 'sdk/src'];

function sourceFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) found.push(...sourceFiles(path));
    else if (/\.ts$/.test(entry) && !entry.endsWith('.d.ts')) found.push(path);
  }
  return found;
}

/** The repository file an import names, or null for a package or a file outside the trees. */
function resolveImport(from: string, specifier: string): string | null {
  let target: string;
  if (specifier.startsWith('#lib/')) target = join(ROOT, 'lib', specifier.slice('#lib/'.length));
  else if (specifier.startsWith('.')) target = resolve(dirname(from), specifier);
  else return null;
  return relative(ROOT, target.replace(/\.js$/, '.ts'));
}

/** The strongly connected components of more than one file (Tarjan), each a circle of imports. */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!graph.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles.map(({ fileName }) => resolveImport(file, fileName)).filter((x) => x !== null);
    graph.set(relative(ROOT, file), targets);
  }
  return graph;
}

t.test('no circle of imports in the production trees', async (t) => {
  const files = TREES.flatMap((tree) => sourceFiles(join(ROOT, tree)));
  t.ok(files.length > 300, `read ${files.length} files`);
  t.same(circles(importGraph(files)), []);
});

t.test('the check finds a circle, type-only imports included', async (t) => {
  const graph = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['a.ts']],
  ]);
  t.same(circles(graph), [['a.ts', 'b.ts', 'c.ts']]);
  t.same(resolveImport(join(ROOT, 'gateway/src/x.ts'), './context.js'), 'gateway/src/context.ts');
  t.same(
    resolveImport(join(ROOT, 'gateway/src/x.ts'), '#lib/errors/keyplane-error.js'),
    'lib/errors/keyplane-error.ts',
  );
  t.equal(resolveImport(join(ROOT, 'gateway/src/x.ts'), 'fastify'), null);
  const { importedFiles } = ts.preProcessFile(
    "import type { A } from './a.js';\nconst b = await import('./b.js');",
    true,
    true,
  );
  t.same(
    importedFiles.map(({ fileName }) => fileName),
    ['./a.js', './b.js'],
  );
});
