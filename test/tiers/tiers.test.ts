import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import t from 'tap';
import {
  failureTrail,
  classify,
  groupFiles,
  importsOf,
  listTestFiles,
  needsOwnProcess,
  processTimeoutOf,
  TIERS,
  tierRuns,
} from './tiers.mjs';
import { tempDir } from '../helpers/build.js';

t.test('every test file runs in exactly one tier, or in one tier per storage backend', async (t) => {
  const files = listTestFiles();
  t.ok(files.length > 200, 'finds the suite');
  t.ok(files.includes('test/tiers/tiers.test.ts'), 'finds this file');
  const runs = new Map<string, string[]>();
  for (const tier of TIERS)
    for (const run of tierRuns(tier))
      for (const file of run.files)
        runs.set(file, [...(runs.get(file) ?? []), `${tier}${run.storage ? `:${run.storage}` : ''}`]);
  for (const file of files) {
    const places = runs.get(file) ?? [];
    if (places.length === 2) t.same(places, ['unit:sqlite', 'integration:postgres'], `${file} is split by storage`);
    else t.equal(places.length, 1, `${file} is in one tier (${places.join(', ') || 'none'})`);
  }
  t.same([...runs.keys()].sort(), files, 'the tiers run no file that is not a test file');
});

t.test('a file is raised by what it imports, itself or through the helpers it imports', async (t) => {
  const root = tempDir(t);
  const write = (path: string, source: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), source);
  };
  write('test/helpers/browser.ts', "import { chromium } from 'playwright-core';\n");
  write('test/helpers/build.ts', "import { buildControlPlane } from '../../control-plane/src/app.js';\n");
  write('test/helpers/storage-backends.ts', "import pg from 'pg';\n");
  write('test/lib/pure.test.ts', "import t from 'tap';\nimport { checkPkce } from '#lib/pkce/check-pkce.js';\n");
  write('test/lib/temp.test.ts', "import { tempDir, manualClock } from '../helpers/build.js';\n");
  write(
    'test/lib/typed.test.ts',
    "import type { Browser } from 'playwright-core';\nimport { type Page } from 'playwright-core';\n",
  );
  write('test/lib/spawns.test.ts', "import { spawn } from 'node:child_process';\n");
  write('test/lib/lazy.test.ts', "const { chromium } = await import('../helpers/browser.js');\n");
  write('test/control-plane/x/http.test.ts', "import { build } from '../../helpers/build.js';\n");
  write('test/control-plane/x/store.test.ts', "import { onEveryBackend } from '../../helpers/storage-backends.js';\n");
  write('test/newdir/plain.test.ts', "import t from 'tap';\n");
  write('test/interop/plain.test.ts', "import t from 'tap';\n");
  const placed = classify(
    [
      'test/lib/pure.test.ts',
      'test/lib/temp.test.ts',
      'test/lib/typed.test.ts',
      'test/lib/spawns.test.ts',
      'test/lib/lazy.test.ts',
      'test/control-plane/x/http.test.ts',
      'test/control-plane/x/store.test.ts',
      'test/newdir/plain.test.ts',
      'test/interop/plain.test.ts',
    ],
    root,
  );
  const tierOf = (file: string) =>
    placed
      .find((p) => p.file === file)!
      .tiers.map((p) => `${p.tier}${p.storage ? `:${p.storage}` : ''}`)
      .join('+');
  t.equal(tierOf('test/lib/pure.test.ts'), 'unit');
  t.equal(tierOf('test/lib/temp.test.ts'), 'unit', 'a temporary directory and a clock boot nothing');
  t.equal(tierOf('test/lib/typed.test.ts'), 'unit', 'type-only imports count for nothing');
  t.equal(tierOf('test/lib/spawns.test.ts'), 'e2e', 'a child process is e2e');
  t.equal(tierOf('test/lib/lazy.test.ts'), 'e2e', 'a browser through a helper, imported lazily, is e2e');
  t.equal(tierOf('test/control-plane/x/http.test.ts'), 'integration', 'booting the app is integration');
  t.equal(tierOf('test/control-plane/x/store.test.ts'), 'unit:sqlite+integration:postgres');
  t.equal(tierOf('test/newdir/plain.test.ts'), 'integration', 'an unknown folder starts in integration');
  t.equal(tierOf('test/interop/plain.test.ts'), 'e2e');
});

t.test('reads named, default, side-effect, dynamic and re-exported imports', async (t) => {
  t.same(
    importsOf(
      [
        "import a from 'a';",
        "import { b, type C, d as e } from './b.js';",
        "import type { F } from 'f';",
        "import 'g';",
        "export { h } from 'h';",
        "const i = await import('i');",
        'const text = "await import(\'in-a-string\')";',
      ].join('\n'),
    ),
    [
      { specifier: 'a', names: null },
      { specifier: './b.js', names: ['b', 'd'] },
      { specifier: 'h', names: ['h'] },
      { specifier: 'g', names: null },
      { specifier: 'i', names: null },
    ],
  );
});

t.test(
  'files share a process in groups of about equal size; a file that sets the whole process keeps its own',
  async (t) => {
    t.notOk(
      needsOwnProcess("import t from 'tap';\nt.setTimeout(300_000);\n"),
      "a timeout for the whole process: counted in its group's",
    );
    t.equal(processTimeoutOf("import t from 'tap';\nt.setTimeout(300_000);\n"), 300_000);
    t.equal(processTimeoutOf("t.test('x', async (t) => {\n  t.setTimeout(5000);\n});\n"), undefined);
    t.ok(needsOwnProcess('t.before(async () => {});\n'), 'a root-level before');
    t.ok(needsOwnProcess('// tiers: own process: it changes process.env\n'), 'said in a comment');
    t.notOk(needsOwnProcess("t.test('x', async (t) => {\n  t.setTimeout(5000);\n});\n"), "a subtest's own timeout");
    const root = tempDir(t);
    const files = Array.from({ length: 17 }, (_, i) => `test/x/f${String(i).padStart(2, '0')}.test.ts`);
    mkdirSync(join(root, 'test/x'), { recursive: true });
    for (const [i, file] of files.entries()) writeFileSync(join(root, file), `// ${'x'.repeat(i * 100)}\n`);
    writeFileSync(join(root, 'test/x/alone.test.ts'), 't.before(async () => {});\n');
    const { groups, alone } = groupFiles([...files, 'test/x/alone.test.ts'], { size: 8, root });
    t.same(alone, ['test/x/alone.test.ts']);
    t.equal(groups.length, 3, 'ceil(17 / 8) groups');
    t.same(groups.flat().sort(), files, 'every other file in exactly one group');
    t.same(
      groups.map((group) => group.length),
      [5, 6, 6],
    );
    t.same(
      groups[0]!.slice(0, 2),
      ['test/x/f16.test.ts', 'test/x/f11.test.ts'],
      'largest first, then back the other way',
    );
    // The files that set a process timeout (the long suites) are dealt first, one to each group.
    const timed = ['test/x/slow-a.test.ts', 'test/x/slow-b.test.ts'];
    for (const file of timed) writeFileSync(join(root, file), 't.setTimeout(300_000);\n');
    const dealt = groupFiles([...files, ...timed], { size: 8, root });
    t.same(dealt.alone, []);
    t.same(
      dealt.groups.map((group) => group[0]),
      [...timed, 'test/x/f16.test.ts'],
      'one timed file at the head of each group',
    );
    const more = ['test/x/slow-c.test.ts', 'test/x/slow-d.test.ts'];
    for (const file of more) writeFileSync(join(root, file), 't.setTimeout(300_000);\n');
    const first = groupFiles([...files, ...timed, ...more], { size: 8, root }).groups[0]!;
    t.same(
      first.filter((file) => file.includes('slow')),
      more,
      'the group that drew two long suites starts first',
    );
  },
);

t.test('a failed assertion is named by its subtests and its line; its parents are not named again', async (t) => {
  const failures: string[] = [];
  const trail = failureTrail(failures);
  const log = `# Subtest: .tap/groups/e2e-1-group.test.mjs
    # Subtest: test/a.test.ts
        # Subtest: signs in
            ok 1 - the page
            not ok 2 - should be equal
              ---
              found: 1
              wanted: 2
              at:
                fileName: test/a.test.ts
                lineNumber: 42
              ...
            1..2
        not ok 1 - signs in # time=12ms
        # Subtest: times out
        not ok 2 - times out # time=30000ms
    not ok 1 - test/a.test.ts
not ok 1 - .tap/groups/e2e-1-group.test.mjs # time=1ms`;
  for (const line of log.split('\n')) trail.read(line);
  t.same(failures, [
    '.tap/groups/e2e-1-group.test.mjs > test/a.test.ts > signs in > should be equal (at test/a.test.ts:42)',
    '.tap/groups/e2e-1-group.test.mjs > test/a.test.ts > times out',
  ]);
});
