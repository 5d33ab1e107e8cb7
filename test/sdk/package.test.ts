import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The SDK is its own package: ESM with type declarations, and jose its only run-time dependency. */
const root = join(import.meta.dirname, '../../sdk');

t.test('the SDK package depends on jose alone and builds ESM with declarations', async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  t.equal(pkg.name, '@keyplane/sdk');
  t.equal(pkg.type, 'module');
  t.same(Object.keys(pkg.dependencies), ['jose']);
  t.equal(pkg.exports['.'].types, './dist/index.d.ts');
  const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8'));
  t.equal(tsconfig.compilerOptions.declaration, true);
});

t.test('SDK sources import only jose, node built-ins, their own modules, and framework types', async (t) => {
  for (const file of readdirSync(join(root, 'src'))) {
    const source = readFileSync(join(root, 'src', file), 'utf8');
    for (const [, line, spec] of source.matchAll(/^(import (?:type )?[^;]*?from '([^']+)';)$/gms)) {
      const allowed =
        spec === 'jose' ||
        spec!.startsWith('node:') ||
        spec!.startsWith('./') ||
        (line!.startsWith('import type') && spec === 'fastify');
      t.ok(allowed, `${file}: ${spec}`);
    }
  }
});
