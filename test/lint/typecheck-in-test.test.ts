import t from 'tap';
import { readFileSync } from 'node:fs';

// `npm test` type-checks what the suite runs: the loader strips types without checking them
// (test/loader/hooks.mjs), so without this a test whose wait returned a boolean and never waited
// would pass. The check is `npm run typecheck` over tsconfig.json, which must cover tests and benchmarks.
const packageJson = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
const tsconfig = JSON.parse(readFileSync('tsconfig.json', 'utf8')) as { include: string[]; exclude?: string[] };

t.test('npm test runs the type check before the suite', async (t) => {
  const steps = packageJson.scripts.pretest!.split('&&').map((step) => step.trim());
  t.ok(steps.includes('npm run typecheck'), `pretest is ${packageJson.scripts.pretest}`);
  t.equal(packageJson.scripts.typecheck, 'tsc -p tsconfig.json --noEmit');
});

t.test('the type check covers the tests, the benchmarks and every source tree', async (t) => {
  for (const tree of ['test', 'bench', 'lib', 'config', 'control-plane/src', 'gateway/src', 'cli/src', 'sdk/src'])
    t.ok(tsconfig.include.includes(tree), `tsconfig.json includes ${tree}`);
  t.same(tsconfig.exclude ?? [], [], 'nothing is excluded');
});
