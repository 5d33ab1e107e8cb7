import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import t from 'tap';
import { groupEntry, ROOT } from './tiers.mjs';

const TAP = join(createRequire(import.meta.url).resolve('tap/package.json'), '..', 'dist/esm/run.mjs');

/** Runs tap on one group entry made of `files` (name → source), as the tier runner does. */
function runGroup(files: Record<string, string>): string {
  const dir = mkdtempSync(join(ROOT, '.tap/group-entry-'));
  try {
    for (const [name, source] of Object.entries(files)) writeFileSync(join(dir, name), source);
    writeFileSync(
      join(dir, 'entry.test.mjs'),
      groupEntry(
        Object.keys(files).map((name) => `./${name}`),
        60_000,
      ),
    );
    const run = spawnSync(process.execPath, [TAP, '--disable-coverage', join(dir, 'entry.test.mjs')], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    return run.stdout + run.stderr;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

t.test("a file's root teardown does not end the group before the next file's tests run", async (t) => {
  const out = runGroup({
    // A root teardown (here closing a server, which keeps the process alive until it runs).
    'first.mjs': [
      "import t from 'tap';",
      "import { createServer } from 'node:net';",
      'const server = createServer().listen(0);',
      "t.teardown(() => { console.log('# the teardown ran'); server.close(); });",
      "t.test('first', async (t) => t.pass('first'));",
    ].join('\n'),
    // A file that takes a while to import, as one does whose modules are still being compiled.
    'second.mjs': [
      "import t from 'tap';",
      'await new Promise((resolve) => setTimeout(resolve, 300));',
      't.setTimeout(1000);',
      "t.test('second', async (t) => t.pass('second'));",
    ].join('\n'),
  });
  t.notMatch(out, 'cannot create subtest after parent test ends');
  t.match(out, /ok \d+ - first/);
  t.match(out, /ok \d+ - second/);
  t.match(out, '# the teardown ran');
  t.notMatch(out, /not ok/, 'nothing failed');
});
