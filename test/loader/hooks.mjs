// Module hooks that run the TypeScript sources in tests: swc strips the types of each file on its
// own (as `tsc --isolatedModules` would), with an inline source map so stack traces and the
// coverage report point at the .ts lines. ts-node did the same through the TypeScript compiler at
// several seconds of CPU per test process; tsx minifies whitespace, which breaks line coverage.
//
// swc is its WebAssembly build: the native @swc/core needs a lock entry for every platform's
// binary, which a registry mirror without them cannot give `npm ci`. Loading the wasm costs about
// two seconds per process, so each output is kept on disk under the hash of its source and
// options, and a process whose files are all cached never loads swc at all.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// tsconfig.json: target ES2022, class fields with define semantics, ES modules (package type module).
const OPTIONS = {
  swcrc: false,
  sourceMaps: 'inline',
  module: { type: 'es6' },
  jsc: {
    parser: { syntax: 'typescript' },
    target: 'es2022',
    keepClassNames: true,
    transform: { useDefineForClassFields: true },
  },
};

const require = createRequire(import.meta.url);
const SWC_VERSION = require('@swc/wasm/package.json').version;
const CACHE_DIR = join(fileURLToPath(new URL('../../node_modules/.cache/keyplane-test-swc/', import.meta.url)));
const OPTIONS_KEY = JSON.stringify(OPTIONS) + SWC_VERSION;

let swc;

const ROOT_URL = new URL('../../', import.meta.url);
/** package.json `imports` (`#lib/*` -> `./lib/*`): the shared layers by name, read once. */
const PACKAGE_IMPORTS = Object.entries(
  JSON.parse(readFileSync(new URL('package.json', ROOT_URL), 'utf8')).imports ?? {},
).filter(([pattern, target]) => pattern.endsWith('/*') && typeof target === 'string');

/**
 * NodeNext specifiers name the emitted file (`./app.js`, `#lib/errors/keyplane-error.js`); from a
 * .ts file they mean the .ts source.
 */
export async function resolve(specifier, context, next) {
  if (context.parentURL?.endsWith('.ts') && specifier.endsWith('.js')) {
    let source = null;
    if (/^\.\.?\//.test(specifier)) source = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
    else if (specifier.startsWith('#')) {
      const match = PACKAGE_IMPORTS.find(([pattern]) => specifier.startsWith(pattern.slice(0, -1)));
      if (match) {
        const [pattern, target] = match;
        const path = target.replace('*', specifier.slice(pattern.length - 1));
        source = new URL(`${path.slice(0, -3)}.ts`, ROOT_URL);
      }
    }
    if (source && existsSync(fileURLToPath(source))) return { url: source.href, format: 'module', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const filename = fileURLToPath(url);
  const source = await readFile(filename, 'utf8');
  // The file name is part of the key: the inline source map names it.
  const key = createHash('sha256')
    .update(OPTIONS_KEY)
    .update('\0')
    .update(filename)
    .update('\0')
    .update(source)
    .digest('hex');
  const cached = join(CACHE_DIR, `${key}.js`);
  if (existsSync(cached)) return { format: 'module', source: readFileSync(cached, 'utf8'), shortCircuit: true };
  swc ??= await import('@swc/wasm');
  const { code } = await swc.transform(source, { ...OPTIONS, filename });
  // Parallel test processes may write the same entry: each writes its own file and renames it.
  mkdirSync(CACHE_DIR, { recursive: true });
  const partial = `${cached}.${process.pid}.tmp`;
  writeFileSync(partial, code);
  renameSync(partial, cached);
  return { format: 'module', source: code, shortCircuit: true };
}
