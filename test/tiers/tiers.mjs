// Test tiers (docs/platform.md#test-tiers). Every test file lands in exactly one tier by rules, so a
// new file needs no registration:
//
//   unit         lib/, operations on services, storage conformance on SQLite: no servers, no
//                browsers, no child processes (test/tiers/unit-guard.mjs refuses them at run time)
//   integration  HTTP through the app, PostgreSQL, Redis, in-process peers
//   e2e          Chromium, nginx, Caddy, Apache, CLI processes, own Redis/PostgreSQL servers, interop
//
// A file starts from the tier of its folder (folders not listed start in integration) and is raised
// by what it imports, itself or through the test files it imports (helpers): a browser or a child
// process makes it e2e, a server, a socket library or the booted app makes it integration. Type-only
// imports count for nothing. A file that runs its suites through `onEveryBackend` (the storage
// conformance suites) is split: its SQLite half runs in the unit tier, its PostgreSQL half in the
// integration tier (KEYPLANE_TEST_STORAGE chooses the half, see test/helpers/storage-backends.ts).
//
// Plain JavaScript: the tier runner (./run.mjs) loads it with no TypeScript loader.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const TIERS = ['unit', 'integration', 'e2e'];

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The folder a file starts from, by longest matching prefix; anything else starts in integration. */
const FOLDER_TIERS = [
  ['test/lib/', 'unit'],
  ['test/config/', 'unit'],
  ['test/lint/', 'unit'],
  ['test/tiers/', 'unit'],
  ['test/loader/', 'unit'],
  ['test/control-plane/', 'unit'],
  ['test/interop/', 'e2e'],
  ['test/faults/', 'e2e'],
];

/** Packages and Node.js modules that start a browser or another process. */
const E2E_PACKAGES = new Set(['playwright-core', 'node:child_process', 'child_process', 'node:cluster']);

/** Packages and Node.js modules that open servers or sockets, or boot the HTTP app. */
const INTEGRATION_PACKAGES = new Set([
  'fastify',
  'light-my-request',
  'node:http',
  'node:https',
  'node:http2',
  'node:net',
  'node:tls',
  'node:dgram',
  'http',
  'https',
  'net',
  'ioredis',
  'pg',
  'undici',
  'express',
  'smtp-server',
  'dns2',
  'openid-client',
  'oidc-provider',
]);

/** Our own modules (outside test/) that listen, connect or boot the app, by path from the root. */
const INTEGRATION_SOURCES = [
  /^control-plane\/src\/(app|server)\.ts$/,
  /^control-plane\/src\/storage\/postgres\//,
  /^gateway\/src\//,
  /^cli\/src\//,
  /^lib\/runtime\/listen\.ts$/,
  /^lib\/runtime\/shared-state\/redis\.ts$/,
];

/**
 * Helpers whose module mixes things that boot with things that do not: importing only these names
 * raises nothing (a temporary directory and a hand-moved clock are unit-tier tools).
 */
const QUIET_NAMES = new Map([
  ['test/helpers/build.ts', new Set(['tempDir', 'manualClock', 'TEST_ISSUER', 'TEST_MASTER_KEY'])],
]);

/** The helper whose users are split between the SQLite (unit) and PostgreSQL (integration) halves. */
const SPLIT_HELPER = 'test/helpers/storage-backends.ts';

const rank = (tier) => TIERS.indexOf(tier);
const higher = (a, b) => (rank(a) >= rank(b) ? a : b);

/** Every test file, relative to the root, as tap's `include` (.taprc) finds them. */
export function listTestFiles(root = ROOT) {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = posix.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'fixtures' && entry.name !== 'node_modules') walk(path);
      } else if (entry.name.endsWith('.test.ts')) files.push(path);
    }
  };
  walk('test');
  return files.sort();
}

/**
 * The imports of one source, without type-only ones: `{ specifier, names }`, where `names` is the
 * list of named bindings, or null when the whole module is taken (default, namespace, side effect,
 * dynamic import, re-export).
 */
export function importsOf(source) {
  const found = [];
  const statement = /(?:^|[;\n])\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]/g;
  for (const match of source.matchAll(statement)) {
    if (match[2]) continue;
    const clause = match[3];
    const named = /^\{([^}]*)\}$/.exec(clause.trim());
    const names = named
      ? named[1]
          .split(',')
          .map((part) => part.trim())
          .filter((part) => part && !part.startsWith('type '))
          .map((part) => part.split(/\s+as\s+/)[0].trim())
      : null;
    if (named && names.length === 0) continue;
    found.push({ specifier: match[4], names });
  }
  for (const match of source.matchAll(/(?:^|[;\n])\s*import\s*['"]([^'"]+)['"]/g))
    found.push({ specifier: match[1], names: null });
  for (const match of source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    // Not one written inside a string on its line (a test that writes made-up sources).
    const line = source.slice(source.lastIndexOf('\n', match.index) + 1, match.index);
    if ([`'`, '"', '`'].some((quote) => line.split(quote).length % 2 === 0)) continue;
    found.push({ specifier: match[1], names: null });
  }
  return found;
}

/** Resolves a relative `./x.js` specifier of `from` (root-relative) to the `.ts` file beside it. */
function resolveRelative(from, specifier) {
  const path = posix.normalize(posix.join(posix.dirname(from), specifier));
  return path.endsWith('.js') ? `${path.slice(0, -3)}.ts` : path;
}

/**
 * What a file needs, from its own imports and those of the test files it imports: the tier its
 * imports require (unit when nothing) and whether it runs suites on every storage backend.
 */
function makeAnalyser(root) {
  const memo = new Map();
  const analyse = (file) => {
    const known = memo.get(file);
    if (known) return known;
    const result = { tier: 'unit', split: false, reasons: [] };
    memo.set(file, result);
    let source;
    try {
      source = readFileSync(join(root, file), 'utf8');
    } catch {
      return result;
    }
    const raise = (tier, reason) => {
      if (rank(tier) > rank('unit')) result.reasons.push(reason);
      result.tier = higher(result.tier, tier);
    };
    for (const { specifier, names } of importsOf(source)) {
      if (!specifier.startsWith('.')) {
        if (E2E_PACKAGES.has(specifier)) raise('e2e', specifier);
        else if (
          INTEGRATION_PACKAGES.has(specifier) ||
          [...INTEGRATION_PACKAGES].some((p) => specifier.startsWith(`${p}/`))
        )
          raise('integration', specifier);
        continue;
      }
      const target = resolveRelative(file, specifier);
      if (target === SPLIT_HELPER) {
        result.split = true;
        continue;
      }
      if (!target.startsWith('test/')) {
        if (INTEGRATION_SOURCES.some((pattern) => pattern.test(target))) raise('integration', target);
        continue;
      }
      const quiet = QUIET_NAMES.get(target);
      if (quiet && names && names.every((name) => quiet.has(name))) continue;
      const inner = analyse(target);
      if (rank(inner.tier) > rank('unit')) raise(inner.tier, `${target} (${inner.reasons[0]})`);
      if (inner.split) result.split = true;
    }
    return result;
  };
  return analyse;
}

function folderTier(file) {
  let best = { prefix: '', tier: 'integration' };
  for (const [prefix, tier] of FOLDER_TIERS)
    if (file.startsWith(prefix) && prefix.length > best.prefix.length) best = { prefix, tier };
  return best.tier;
}

/**
 * Each test file's place: `{ file, tiers: [{ tier, storage? }], reasons }`. A file has one tier, or
 * two when split between the storage backends (`storage: 'sqlite'` in unit, `'postgres'` after).
 */
export function classify(files = listTestFiles(), root = ROOT) {
  const analyse = makeAnalyser(root);
  return files.map((file) => {
    const needs = analyse(file);
    const tier = higher(folderTier(file), needs.tier);
    if (needs.split && tier === 'unit')
      return {
        file,
        tiers: [
          { tier: 'unit', storage: 'sqlite' },
          { tier: 'integration', storage: 'postgres' },
        ],
        reasons: needs.reasons,
      };
    return { file, tiers: [{ tier }], reasons: needs.reasons };
  });
}

/** The runs of one tier: `[{ storage?, files }]`, one group per storage choice. */
export function tierRuns(tier, placed = classify()) {
  const groups = new Map();
  for (const { file, tiers } of placed)
    for (const place of tiers) {
      if (place.tier !== tier) continue;
      const key = place.storage ?? '';
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(file);
    }
  return [...groups.entries()].map(([storage, files]) => ({ ...(storage ? { storage } : {}), files }));
}

/**
 * Whether a file must have a test process of its own: it sets the whole process's plan, or runs a
 * root-level `before`, `beforeEach` or `afterEach`, which in a shared process would apply to the
 * other files too; or it says so (`// tiers: own process`, with the reason beside it). A root-level
 * `t.setTimeout(ms)` does not: the group's entry counts it in the group's timeout
 * (`processTimeoutOf`, docs/platform.md#one-process-for-several-files).
 */
export function needsOwnProcess(source) {
  return /^t\.(plan|before|beforeEach|afterEach)\(/m.test(source) || /^\/\/ tiers: own process\b/m.test(source);
}

/** The timeout a file sets for its whole process (`t.setTimeout(300_000)` at its top level), in ms. */
export function processTimeoutOf(source) {
  const match = /^t\.setTimeout\(([\d_]+)\)/m.exec(source);
  return match ? Number(match[1].replaceAll('_', '')) : undefined;
}

/**
 * Splits one run's files into groups that share a test process (docs/platform.md#one-process-for-several-files):
 * `{ groups: string[][], alone: string[] }`. Each process pays about two seconds of CPU before its
 * first test (tap, the TypeScript loader, importing and first building the control plane), and
 * with coverage about another second writing it out at exit, so files run `size` to a process.
 * The files that set a process timeout of their own (the long fault, CLI and browser suites) are
 * dealt first, one to each group in turn, then the others largest first, one to each group in
 * turn and back again (a snake draft), so the groups take about as long as each other; the groups
 * with the most of those files come first.
 */
export function groupFiles(files, { size = 8, root = ROOT } = {}) {
  const alone = [];
  const together = [];
  const sources = new Map(files.map((file) => [file, readFileSync(join(root, file), 'utf8')]));
  for (const file of files) (needsOwnProcess(sources.get(file)) ? alone : together).push(file);
  const bytes = new Map(together.map((file) => [file, statSync(join(root, file)).size]));
  const timed = new Map(together.map((file) => [file, processTimeoutOf(sources.get(file)) ? 1 : 0]));
  together.sort((a, b) => timed.get(b) - timed.get(a) || bytes.get(b) - bytes.get(a) || a.localeCompare(b));
  const count = Math.ceil(together.length / size);
  const groups = Array.from({ length: count }, () => []);
  together.forEach((file, i) => {
    const lap = Math.floor(i / count);
    groups[lap % 2 ? count - 1 - (i % count) : i % count].push(file);
  });
  // The groups that drew two of the long suites start first, so that none of them starts last.
  const long = (group) => group.filter((file) => timed.get(file)).length;
  groups.sort((a, b) => long(b) - long(a));
  return { groups, alone };
}

export function relativeToRoot(path) {
  return relative(ROOT, path).split('\\').join('/');
}

/**
 * The source of the module that runs `files` (import specifiers, in order) in one test process,
 * `timeoutMs` being the process's timeout (docs/platform.md#one-process-for-several-files). A file
 * alone is imported as it is; in a group, the files' root-level `t.setTimeout` calls are ignored
 * (the group's is their sum).
 */
export function groupEntry(files, timeoutMs) {
  // A file whose top level throws (a peer that would not start) fails as a test of its own and
  // the group goes on: left to reject, the import ended the process and the files after it with
  // no test failed and nothing said on tap's output.
  const imports = files.flatMap((file) => [
    `importing = ${JSON.stringify(file.replace(/^(\.\.\/)+/, ''))};`,
    `try { await import(${JSON.stringify(file)}); } catch (error) { t.fail(\`\${importing} loads: \${error?.stack ?? error}\`); }`,
  ]);
  const lines = [
    "import t from 'tap';",
    ...(files.length === 1
      ? []
      : [
          `t.setTimeout(${timeoutMs});`,
          'const setProcessTimeout = t.setTimeout.bind(t);',
          't.setTimeout = (ms) => (ms === 0 ? setProcessTimeout(0) : t);',
        ]),
    ...FILE_TIMES.split('\n'),
    ...imports,
  ];
  return [
    `// Written by test/tiers/run.mjs: ${files.length} test file${files.length === 1 ? '' : 's'} in one process.`,
    ...lines,
    '',
  ].join('\n');
}

/**
 * Part of each entry: the wall time of each file's top-level tests, written to
 * `.tap/file-times/<entry>.json` at exit for the runner's list of the slowest files. A top-level
 * test belongs to the file being imported when it was registered; tap starts them in that order.
 */
const FILE_TIMES = `import { mkdirSync as kpMkdir, writeFileSync as kpWrite } from 'node:fs';
let importing = '';
const kpRegistered = [];
const kpStarted = new Map();
const kpSpent = {};
const kpTest = t.test.bind(t);
t.test = (...args) => {
  kpRegistered.push({ name: typeof args[0] === 'string' ? args[0] : (args[0]?.name ?? ''), file: importing });
  return kpTest(...args);
};
t.on('subtestStart', (sub) => {
  const at = kpRegistered.findIndex((entry) => entry.name === sub.name);
  const file = at === -1 ? importing : kpRegistered.splice(at, 1)[0].file;
  kpStarted.set(sub, { file, at: performance.now() });
});
t.on('subtestEnd', (sub) => {
  const start = kpStarted.get(sub);
  if (start) kpSpent[start.file] = (kpSpent[start.file] ?? 0) + (performance.now() - start.at) / 1000;
});
process.on('exit', () => {
  try {
    const dir = new URL('../file-times/', import.meta.url);
    kpMkdir(dir, { recursive: true });
    kpWrite(new URL(import.meta.url.split('/').pop() + '.json', dir), JSON.stringify(kpSpent));
  } catch {}
});`;

/**
 * Follows tap's output of one run by indentation (`# Subtest: name` opens a level four spaces in)
 * and adds to `failures` the path of each `not ok` line with its place in the test file, so a
 * failure deep in a long log can be named at its end.
 */
export function failureTrail(failures) {
  const open = [];
  // The failure whose YAML diagnostics follow: its place in the test file is added to its path.
  let last = -1;
  return {
    read(line) {
      if (last >= 0) {
        const place = /^ +(fileName|lineNumber): (.*)$/.exec(line);
        if (place) failures[last] += place[1] === 'fileName' ? ` (at ${place[2]}` : `:${place[2]})`;
        if (/^ +\.\.\.$/.test(line)) last = -1;
        if (place || last >= 0) return;
      }
      const subtest = /^( *)# Subtest: (.*)$/.exec(line);
      if (subtest) {
        const depth = subtest[1].length / 4;
        open.length = depth;
        open[depth] = subtest[2];
        return;
      }
      const failed = /^( *)not ok \d+ - (.*?)(?: # time=.*)?$/.exec(line);
      if (!failed) return;
      const depth = failed[1].length / 4;
      const path = [...open.slice(0, depth), failed[2]].join(' > ');
      open.length = depth;
      // A subtest's own `not ok` follows its failed assertion's, which names it already.
      if (failures.some((named) => named.startsWith(`${path} > `))) return;
      failures.push(path);
      last = failures.length - 1;
    },
  };
}
