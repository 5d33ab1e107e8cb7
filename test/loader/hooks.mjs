// Module hooks that run the TypeScript sources in tests: swc strips the types of each file on its
// own (as `tsc --isolatedModules` would), with an inline source map so stack traces and the
// coverage report point at the .ts lines. ts-node did the same through the TypeScript compiler at
// several seconds of CPU per test process; tsx minifies whitespace, which breaks line coverage.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { transform } from '@swc/core';

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

/** NodeNext specifiers name the emitted file (`./app.js`); from a .ts file they mean the .ts beside it. */
export async function resolve(specifier, context, next) {
  if (context.parentURL?.endsWith('.ts') && specifier.endsWith('.js') && /^\.\.?\//.test(specifier)) {
    const source = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
    if (existsSync(fileURLToPath(source))) return { url: source.href, format: 'module', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const filename = fileURLToPath(url);
  const { code } = await transform(await readFile(filename, 'utf8'), { ...OPTIONS, filename });
  return { format: 'module', source: code, shortCircuit: true };
}
