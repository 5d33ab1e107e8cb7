import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

// Every runtime dependency earns its place in what `npm ci --omit=dev` installs: some production
// module imports it (statically, for its side effects, by `import()` or by `require.resolve` of a
// file it serves). A package only tests or tools use is a devDependency.
const ROOT = process.cwd();
const PRODUCTION_TREES = ['lib', 'config', 'control-plane/src', 'gateway/src', 'cli/src'];
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mjs|js)$/.test(entry) && !entry.endsWith('.d.ts') ? [path] : [];
  });
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const imports = (name: string) =>
  new RegExp(`(\\bfrom|\\bimport|\\bimport\\(|\\bresolve\\()\\s*['"]${escape(name)}(/[^'"]*)?['"]`);

t.test('each runtime dependency is imported by production code', async (t) => {
  const code = PRODUCTION_TREES.flatMap((tree) => sources(join(ROOT, tree))).map((file) => readFileSync(file, 'utf8'));
  const unused = Object.keys(manifest.dependencies).filter((name) => !code.some((text) => imports(name).test(text)));
  t.same(unused, [], 'move a package only tests or tools use to devDependencies');
});

t.test('the pattern sees each way of importing', async (t) => {
  const pattern = imports('@formatjs/icu-messageformat-parser');
  t.ok(pattern.test(`import { parse } from '@formatjs/icu-messageformat-parser';`));
  t.ok(imports('reflect-metadata').test(`import 'reflect-metadata';`));
  t.ok(imports('pg').test(`const { Pool } = await import('pg');`));
  t.ok(imports('@simplewebauthn/browser').test(`require.resolve('@simplewebauthn/browser')`));
  t.notOk(imports('pg').test(`import x from 'pg-protocol';`));
});
