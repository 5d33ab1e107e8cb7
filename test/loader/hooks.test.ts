import t from 'tap';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { tempDir } from '../helpers/build.js';
// @ts-expect-error plain JavaScript module hooks without declarations
import { load, resolve } from './hooks.mjs';

// The test loader (docs/architecture.md#hand-written-on-purpose) is what every test process runs
// first: NodeNext `.js` specifiers from TypeScript map to the `.ts` beside them, `#lib/…` through
// package.json `imports`, and each file's types are stripped once and then read from the cache.
const ROOT = process.cwd();
const fromTs = pathToFileURL(join(ROOT, 'control-plane/src/app.ts')).href;
const passedOn = (specifier: string) => ({ url: `next:${specifier}` });
const next = async (specifier: string) => passedOn(specifier);

t.test('maps NodeNext specifiers from TypeScript to the TypeScript source', async (t) => {
  t.same(await resolve('./context.js', { parentURL: fromTs }, next), {
    url: pathToFileURL(join(ROOT, 'control-plane/src/context.ts')).href,
    format: 'module',
    shortCircuit: true,
  });
  t.equal(
    (await resolve('#lib/errors/keyplane-error.js', { parentURL: fromTs }, next)).url,
    pathToFileURL(join(ROOT, 'lib/errors/keyplane-error.ts')).href,
  );
});

t.test('leaves every other specifier to Node.js', async (t) => {
  t.same(await resolve('./missing.js', { parentURL: fromTs }, next), passedOn('./missing.js'), 'no .ts beside it');
  t.same(await resolve('fastify', { parentURL: fromTs }, next), passedOn('fastify'), 'a package');
  const fromJs = pathToFileURL(join(ROOT, 'test/tiers/run.mjs')).href;
  t.same(await resolve('./tiers.js', { parentURL: fromJs }, next), passedOn('./tiers.js'), 'from JavaScript');
});

t.test('strips types once and reads the cached output after', async (t) => {
  const dir = tempDir(t);
  const name = `typed-${process.pid}-${Date.now()}.ts`;
  const file = join(dir, name);
  writeFileSync(file, 'export const answer: number = 42;\nexport type Unused = { a: string };\n');
  const first = await load(pathToFileURL(file).href, {}, next);
  t.equal(first.format, 'module');
  t.match(first.source, /export const answer = 42;/);
  t.notMatch(first.source, /: number|type Unused/);
  t.match(first.source, /sourceMappingURL=data:application\/json/, 'stack traces name the .ts lines');
  // The entry is the one whose inline source map names this file; what it holds is what loads next.
  const cacheDir = join(ROOT, 'node_modules/.cache/keyplane-test-swc');
  const entries = readdirSync(cacheDir)
    .map((entry) => join(cacheDir, entry))
    .filter((entry) => readFileSync(entry, 'utf8') === first.source);
  t.equal(entries.length, 1, 'one cache entry');
  writeFileSync(entries[0]!, 'export const answer = "from the cache";\n');
  t.teardown(() => rmSync(entries[0]!, { force: true }));
  const second = await load(pathToFileURL(file).href, {}, next);
  t.equal(second.source, 'export const answer = "from the cache";\n', 'read from the cache');
  t.same(await load('node:fs', {}, next), passedOn('node:fs'), 'not a TypeScript file');
});
