import t from 'tap';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

// Names mean one thing (docs/architecture.md#layout): the product's proxy is "the gateway" everywhere,
// a file is named for what it holds, and the tests of an area sit in a folder named like its source.
const ROOT = process.cwd();
const CODE_TREES = ['lib', 'config', 'control-plane', 'gateway', 'cli', 'sdk', 'bench', 'deploy'];
const SKIPPED = new Set(['node_modules', 'dist', '.tap', 'coverage', 'data']);
// The old name of the gateway, built from parts so that this file does not name it.
const OLD_GATEWAY_NAME = new RegExp(['edge', 'gate'].join('[- _]?'), 'i');

function walk(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (SKIPPED.has(entry)) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) found.push(...walk(path));
    else if (/\.(ts|mts|js|mjs|sql|yaml|yml|json|html)$/.test(entry)) found.push(path);
  }
  return found;
}

t.test('code, config titles and enums call the proxy the gateway', async (t) => {
  const offending: string[] = [];
  for (const file of CODE_TREES.flatMap((tree) => walk(join(ROOT, tree)))) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        if (OLD_GATEWAY_NAME.test(line)) offending.push(`${file.slice(ROOT.length + 1)}:${index + 1}: ${line.trim()}`);
      });
  }
  t.same(offending, []);
});

t.test('no file is named for being shared, common or a bag of types beside a folder of them', async (t) => {
  const vague = CODE_TREES.flatMap((tree) => walk(join(ROOT, tree)))
    .map((file) => file.slice(ROOT.length + 1))
    .filter((file) => /(^|\/)(shared|common|utils?|helpers|misc|edge)\.ts$/.test(file));
  t.same(vague, []);
  t.notOk(
    existsSync(join(ROOT, 'control-plane/src/storage', ['types', 'ts'].join('.'))),
    'the storage interface is storage/interface.ts',
  );
  t.notOk(existsSync(join(ROOT, 'control-plane/src/operations')), "the operator's tasks are operator-tasks/");
});

// Suites that drive several processes at once and belong to no one area.
const CROSS_CUTTING = new Set(['replicas']);

t.test('each test folder of the control plane is named like the source folder it tests', async (t) => {
  const unmatched = readdirSync(join(ROOT, 'test/control-plane'))
    .filter((entry) => statSync(join(ROOT, 'test/control-plane', entry)).isDirectory())
    .filter((entry) => !CROSS_CUTTING.has(entry))
    .filter(
      (entry) =>
        !existsSync(join(ROOT, 'control-plane/src', entry)) &&
        !existsSync(join(ROOT, 'control-plane/src/routes', entry)),
    );
  t.same(unmatched, []);
});
