#!/usr/bin/env node
// Runs test tiers with tap (docs/platform.md#test-tiers):
//
//   node test/tiers/run.mjs unit|integration|e2e [tap options]   one tier, coverage not checked
//   node test/tiers/run.mjs all [tap options]                   the three in order, then the
//                                                                coverage floors of .taprc on
//                                                                what all three covered
//
// Each tier prints its time. Up to 8 files share one test process (a group; KEYPLANE_TEST_GROUP=n
// sets how many, 0 or 1 a process per file; docs/platform.md#one-process-for-several-files). The
// last line is tap's summary form summed over every run, `# { total: N, pass: N, fail: N, skip: N }`,
// which .ci/run reads. `--disable-coverage` is passed
// on to tap (CI's Node.js 24 pass) and then no coverage is merged or checked.
import { spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import {
  classify,
  failureTrail,
  groupEntry,
  groupFiles,
  processTimeoutOf,
  relativeToRoot,
  ROOT,
  TIERS,
  tierRuns,
} from './tiers.mjs';

const [choice = 'all', ...tapOptions] = process.argv.slice(2);
if (choice !== 'all' && !TIERS.includes(choice)) {
  console.error(`usage: node test/tiers/run.mjs ${TIERS.join('|')}|all [tap options]`);
  process.exit(2);
}
const tiers = choice === 'all' ? TIERS : [choice];
// KEYPLANE_TEST_COVERAGE=1 collects coverage in a single tier as `all` does (to time a tier as
// `npm test` runs it); the floors are still checked only by `all`.
const coverage =
  (choice === 'all' || process.env['KEYPLANE_TEST_COVERAGE'] === '1') && !tapOptions.includes('--disable-coverage');
const checkCoverage = coverage && choice === 'all';
const tapBin = join(createRequire(import.meta.url).resolve('tap/package.json'), '..', 'dist/esm/run.mjs');
const coverageDir = join(ROOT, '.tap/coverage');
const keptCoverage = join(ROOT, '.tap/coverage-tiers');
const groupDir = join(ROOT, '.tap/groups');
/** Each entry's files' wall times, written by the entry at exit (groupEntry in tiers.mjs). */
const fileTimesDir = join(ROOT, '.tap/file-times');
// KEYPLANE_TEST_GROUP=0 gives every file a process of its own (to rule out one file disturbing another).
const askedGroupSize = Number(process.env['KEYPLANE_TEST_GROUP'] ?? 8);
const GROUP_SIZE = Number.isInteger(askedGroupSize) && askedGroupSize > 0 ? askedGroupSize : 1;
/** tap's timeout for one file (.taprc), which a group gets once per file it runs that sets none. */
const FILE_TIMEOUT_MS = 120_000;

/**
 * The entries tap runs for one run's files, all written under .tap/groups/: a group's entry imports
 * its files one after another into one process; a file that needs its own process gets an entry
 * of its own (docs/platform.md#one-process-for-several-files). tap starts files in the order of
 * their names, so the names carry the order: the files alone first, largest first, then the
 * groups (those with two of the long suites first), so that no long file starts last.
 */
function entriesOf(name, files) {
  if (GROUP_SIZE <= 1) return files;
  const { groups, alone } = groupFiles(files, { size: GROUP_SIZE });
  mkdirSync(groupDir, { recursive: true });
  const bytes = (file) => statSync(join(ROOT, file)).size;
  const runs = [...alone.sort((a, b) => bytes(b) - bytes(a)).map((file) => [file]), ...groups];
  const width = String(runs.length).length;
  return runs.map((group, i) => {
    const label = group.length === 1 ? basename(group[0], '.test.ts') : 'group';
    const entry = join(groupDir, `${name}-${String(i + 1).padStart(width, '0')}-${label}.test.mjs`);
    // A group's timeout is its files' timeouts added up: tap's for one file, or the one a file sets
    // for its process (`t.setTimeout(ms)` at its top level), which then leaves the group's alone.
    const timeout = group.reduce(
      (sum, file) => sum + (processTimeoutOf(readFileSync(join(ROOT, file), 'utf8')) ?? FILE_TIMEOUT_MS),
      0,
    );
    writeFileSync(
      entry,
      groupEntry(
        group.map((file) => `../../${file}`),
        timeout,
      ),
    );
    console.log(`# ${relativeToRoot(entry)}: ${group.join(' ')}`);
    return entry;
  });
}

/**
 * The files whose tests took longest (wall seconds in their process, over every tier and storage
 * run): where the suite's time goes, printed beside the tier times at the end of the run.
 */
function printSlowestFiles(count = 15) {
  if (!existsSync(fileTimesDir)) return;
  const spent = new Map();
  for (const name of readdirSync(fileTimesDir)) {
    let times;
    try {
      times = JSON.parse(readFileSync(join(fileTimesDir, name), 'utf8'));
    } catch {
      continue;
    }
    const tier = name.split('-')[0];
    for (const [file, secondsSpent] of Object.entries(times)) {
      const key = `${tier} ${file}`;
      spent.set(key, (spent.get(key) ?? 0) + secondsSpent);
    }
  }
  const slowest = [...spent].sort((a, b) => b[1] - a[1]).slice(0, count);
  if (slowest.length === 0) return;
  console.log(`# the ${slowest.length} slowest test files (wall seconds of their tests):`);
  for (const [key, secondsSpent] of slowest) console.log(`#   ${secondsSpent.toFixed(1).padStart(6)} s  ${key}`);
}

const COUNTS = ['total', 'pass', 'fail', 'skip', 'todo'];
const totals = Object.fromEntries(COUNTS.map((name) => [name, 0]));

/**
 * Test processes at a time per tier, unless the command line says (`--jobs`): .taprc's two for the
 * unit tier, which keeps both cores busy; three for integration (its files wait on PostgreSQL,
 * Redis and in-process peers) and for e2e, whose files wait on other processes (a browser, a proxy,
 * a Redis failover) for about a third of their time (docs/platform.md#one-process-for-several-files).
 */
const TIER_JOBS = { integration: 3, e2e: 3 };
const jobsGiven = tapOptions.some((option) => /^(--jobs|-j)/.test(option));

/** Runs tap once and adds its summary line to the totals; resolves with its exit code. */
function runTap(files, env, tier) {
  return new Promise((resolve) => {
    // Without coverage checks per run: one tier covers only part of the code, and .taprc's floors
    // are for the whole suite (checked once below).
    const args = [
      tapBin,
      ...(coverage ? ['--allow-incomplete-coverage', '--coverage-report=none'] : []),
      ...tapOptions,
      ...(TIER_JOBS[tier] && !jobsGiven ? [`--jobs=${TIER_JOBS[tier]}`] : []),
    ];
    if (!coverage && !tapOptions.includes('--disable-coverage')) args.push('--disable-coverage');
    const child = spawn(process.execPath, [...args, ...files], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['inherit', 'pipe', 'inherit'],
    });
    let summary = '';
    let pending = '';
    // Tests that tap refused because their process's root had already ended: they never ran, and
    // tap's summary does not count them, so each is counted here as a failure.
    let refused = 0;
    // When tap said the last entry was over: what follows is tap's coverage check of this run.
    let lastEntry = performance.now();
    const trail = failureTrail(failures);
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop();
      for (const line of lines) {
        trail.read(line);
        if (/^# \{ total:/.test(line)) summary = line;
        else if (/^(not )?ok \d+ - /.test(line)) lastEntry = performance.now();
        else if (line.includes('cannot create subtest after parent test ends')) refused++;
      }
    });
    child.on('close', (code, signal) => {
      if (/^# \{ total:/.test(pending)) summary = pending;
      for (const name of COUNTS) totals[name] += Number(new RegExp(`${name}: (\\d+)`).exec(summary)?.[1] ?? 0);
      // A run that failed without saying which test (a crash, a signal) counts as one failure.
      if ((code !== 0 || signal) && !/fail: [1-9]/.test(summary)) {
        totals.fail += 1;
        failures.push(`${tier}: tap exited with ${signal ?? `code ${code}`} and no failed test`);
      }
      if (refused > 0) {
        console.log(`# ${refused} test(s) refused after their process's root test had ended: not run`);
        totals.fail += refused;
        failures.push(`${tier}: ${refused} test(s) refused, not run`);
      }
      console.log(`# tap's end of run (after the last entry): ${seconds(lastEntry)} s`);
      resolve(refused > 0 ? 1 : (code ?? 1));
    });
  });
}

/** Every failed test, named by its file's subtests down to the assertion, printed once more at the end. */
const failures = [];

const seconds = (since) => ((performance.now() - since) / 1000).toFixed(1);

/**
 * Strips the types of every TypeScript file the tests may load, once, into the test loader's cache
 * (test/loader/hooks.mjs), before any test process starts. On a fresh clone each process would
 * otherwise load swc (about 2 s) and compile what it imports; and in a group, a file still compiling
 * while the root test is idle let tap end the root, which refused the next file's tests (a file's
 * root teardown makes tap end the root when it is idle; docs/platform.md#one-process-for-several-files).
 */
async function warmCompileCache() {
  const warmStarted = performance.now();
  const { load } = await import('../loader/hooks.mjs');
  const next = () => {
    throw new Error('not a TypeScript file');
  };
  const sources = [];
  const walk = (dir) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'fixtures') walk(path);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) sources.push(join(ROOT, path));
    }
  };
  for (const dir of ['lib', 'config', 'control-plane', 'gateway', 'cli', 'sdk', 'test', 'bench']) {
    if (existsSync(join(ROOT, dir))) walk(dir);
  }
  for (const file of sources) await load(pathToFileURL(file).href, {}, next);
  console.log(`# test loader's cache: ${sources.length} TypeScript files in ${seconds(warmStarted)} s`);
}
const placed = classify();
const times = [];
let status = 0;
if (coverage) rmSync(keptCoverage, { recursive: true, force: true });
rmSync(groupDir, { recursive: true, force: true });
rmSync(fileTimesDir, { recursive: true, force: true });
const started = performance.now();
await warmCompileCache();
for (const tier of tiers) {
  const tierStarted = performance.now();
  let files = 0;
  for (const run of tierRuns(tier, placed)) {
    files += run.files.length;
    const what = run.storage ? ` (storage: ${run.storage})` : '';
    console.log(`# tier ${tier}${what}: ${run.files.length} files`);
    const code = await runTap(
      entriesOf(`${tier}${run.storage ? `-${run.storage}` : ''}`, run.files),
      {
        KEYPLANE_TEST_TIER: tier,
        ...(run.storage ? { KEYPLANE_TEST_STORAGE: run.storage } : {}),
      },
      tier,
    );
    if (code !== 0) status = code;
    // tap clears .tap/coverage when it starts: keep each run's coverage for the check at the end.
    if (coverage && existsSync(coverageDir)) {
      mkdirSync(keptCoverage, { recursive: true });
      for (const entry of readdirSync(coverageDir, { withFileTypes: true }))
        renameSync(join(coverageDir, entry.name), join(keptCoverage, entry.name));
    }
  }
  times.push(`${tier} ${seconds(tierStarted)} s (${files} files)`);
  console.log(`# tier ${tier}: ${seconds(tierStarted)} s`);
}

if (checkCoverage) {
  rmSync(coverageDir, { recursive: true, force: true });
  mkdirSync(keptCoverage, { recursive: true });
  cpSync(keptCoverage, coverageDir, { recursive: true });
  rmSync(keptCoverage, { recursive: true, force: true });
  console.log('# coverage of all tiers (floors in .taprc)');
  const reportStarted = performance.now();
  const code = await new Promise((resolve) => {
    const child = spawn(process.execPath, [tapBin, 'report'], { cwd: ROOT, stdio: 'inherit' });
    child.on('close', (exit) => resolve(exit ?? 1));
  });
  console.log(`# coverage of all tiers: ${seconds(reportStarted)} s`);
  if (code !== 0) {
    console.log('# coverage below the floors of .taprc');
    failures.push('coverage below the floors of .taprc');
    totals.fail += 1;
    status = code;
  }
}

printSlowestFiles();
for (const path of failures.slice(0, 40)) console.log(`# failed: ${path}`);
if (failures.length > 40) console.log(`# failed: and ${failures.length - 40} more`);
console.log(`# tier times: ${times.join(', ')}; total ${seconds(started)} s`);
console.log(
  `# { ${COUNTS.filter((name) => name !== 'todo' || totals.todo)
    .map((name) => `${name}: ${totals[name]}`)
    .join(', ')} }`,
);
process.exitCode = status;
