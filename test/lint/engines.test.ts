import t from 'tap';
import { readFileSync } from 'node:fs';
import semver from 'semver';

/**
 * `npm ci` prints no EBADENGINE warning on the Node.js versions the README supports: every package it
 * installs there accepts that version. The two SQLite drivers are optional, so npm installs on each
 * runtime the one it accepts (docs/platform.md#nodejs-versions).
 */
const readme = readFileSync('README.md', 'utf8');
const tested = /runs on Node\.js [^(]*\(tested: ([0-9., ]+);/
  .exec(readme)![1]!
  .split(/,\s*/)
  .map((v) => `${v}.0`);
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[]; optional?: boolean; dev?: boolean }>;
};

t.test('the README names the versions it supports', async (t) => {
  t.ok(tested.length >= 3, tested.join(' '));
  const engines = (JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } }).engines.node;
  for (const version of tested) t.ok(semver.satisfies(version, engines), `${version} meets engines ${engines}`);
});

t.test('every package npm installs on a supported version accepts that version', async (t) => {
  const refused: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    if (!path || !range || entry.optional) continue;
    for (const version of tested)
      if (!semver.satisfies(version, range)) refused.push(`${path} needs node ${range}, not ${version}`);
  }
  t.same(refused, [], 'packages that would print EBADENGINE');
});

t.test('each runtime installs the SQLite driver it loads, and only that one is needed', async (t) => {
  const current = lock.packages['node_modules/better-sqlite3']!;
  const node20 = lock.packages['node_modules/better-sqlite3-node20']!;
  t.ok(current.optional && node20.optional, 'both optional: npm leaves out, silently, the one a runtime refuses');
  t.notOk(semver.satisfies('20.20.0', (current.engines as { node: string }).node));
  t.ok(semver.satisfies('22.23.0', (current.engines as { node: string }).node));
  for (const version of tested)
    t.ok(semver.satisfies(version, (node20.engines as { node: string }).node), `better-sqlite3 12 accepts ${version}`);
});
