import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { groupEntry, ROOT } from './tiers.mjs';

t.test('a file whose top level throws fails as a test of its own, and the files after it still run', async (t) => {
  // Inside the checkout, so that the entry's `import 'tap'` resolves as the runner's entries do.
  const dir = join(ROOT, '.tap', `group-entry-${randomUUID()}`, 'groups');
  mkdirSync(dir, { recursive: true });
  t.teardown(() => rmSync(join(dir, '..'), { recursive: true, force: true }));
  writeFileSync(join(dir, 'first.test.mjs'), "throw new Error('the peer would not start');\n");
  writeFileSync(join(dir, 'second.test.mjs'), "import t from 'tap';\nt.test('second runs', async (t) => t.pass());\n");
  writeFileSync(join(dir, 'entry.test.mjs'), groupEntry(['./first.test.mjs', './second.test.mjs'], 60_000));
  const run = spawnSync(process.execPath, [join(dir, 'entry.test.mjs')], { encoding: 'utf8', cwd: ROOT });
  t.equal(run.status, 1, 'the process fails');
  t.match(run.stdout, /not ok \d+ - \.\/first\.test\.mjs loads/, 'tap says which file did not load');
  t.match(run.stdout, /the peer would not start/, 'and why');
  t.match(run.stdout, /\nok \d+ - second runs/, 'the next file ran');
});
