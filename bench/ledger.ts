/**
 * bench:ledger — the receipt ledger's costs:
 *  1. receipts appended per second, each in its own transaction as a request would, with the
 *     sealer running (timer plus the sealMaxReceipts trigger), through the real SQLite store;
 *  2. proof look-up latency (one indexed read by hash, plus the epoch's checkpoint) after sealing;
 *  3. sealing time and proof size against log2 of the epoch size, at 10k receipts through the
 *     full path and up to 1M receipts with the pure tree functions (a 1M-receipt epoch through
 *     SQLite would store 640 MB of audit paths and take minutes; see docs/performance.md).
 * Appends run once with one caller and once with `LEDGER_CONCURRENCY` callers at once (default 32,
 * requests in flight), on SQLite and (when it answers) PostgreSQL; the target is printed beside.
 * The subscribers' share is measured in the same run (bench/ledger-subscribers.ts): appends with no
 * webhook or stream ("before") and with an operator webhook and a Shared Signals stream taking every
 * receipt ("after"), in alternating rounds, on both backends.
 * `LEDGER_RECEIPTS` sets the full-path count (default 10000), `LEDGER_TREES_UP_TO` the largest
 * pure tree (default 1000000). Prints a markdown section.
 */
import * as nodeCrypto from 'node:crypto';
import { randomBytes, type webcrypto } from 'node:crypto';
import { Database } from '../control-plane/src/storage/sqlite/driver.js';
import { generateKeyPair } from 'jose';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditPath, buildSortedMerkleTree, toHex, treeRoot, verifyInclusionProof } from '#lib/ledger/merkle-tree.js';
import { treeKeyOf } from '#lib/ledger/receipt.js';
import { Ledger } from '../control-plane/src/ledger/ledger.js';
import { lookUpReceipt } from '../control-plane/src/ledger/proofs.js';
import { openSqliteStorage } from '../control-plane/src/storage/sqlite/index.js';
import { openPostgresStorage } from '../control-plane/src/storage/postgres/index.js';
import type { Storage } from '../control-plane/src/storage/interface.js';
import pg from 'pg';
import { subscriberCosts } from './ledger-subscribers.js';
import { transparencyCosts } from './ledger-transparency.js';

const RECEIPTS = Number(process.env['LEDGER_RECEIPTS'] ?? 10_000);
const TREES_UP_TO = Number(process.env['LEDGER_TREES_UP_TO'] ?? 1_000_000);
const log = (line: string) => process.stderr.write(`${line}\n`);
const ms = (ns: bigint) => Number(ns) / 1e6;
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

const TARGET_APPENDS = 5000;
const CONCURRENCY = Number(process.env['LEDGER_CONCURRENCY'] ?? 32);

function sessionStarted() {
  return {
    type: 'session.started' as const,
    at: Date.now(),
    outcome: 'success' as const,
    identityId: `idn_${randomBytes(16).toString('base64url')}`,
    sessionId: `ses_${randomBytes(16).toString('base64url')}`,
    deviceId: `dev_${randomBytes(16).toString('base64url')}`,
    method: 'passkey' as const,
    assurance: 'passkey' as const,
  };
}

/**
 * `count` receipts, each in its own transaction as a request would write it, from `concurrency`
 * callers at once (requests in flight), with the sealer running; returns the hashes and the
 * append time.
 */
async function appendAll(
  storage: Storage,
  ledger: Ledger,
  count: number,
  concurrency: number,
): Promise<{ hashes: string[]; ns: bigint; cpuUs: number }> {
  const hashes: string[] = [];
  let next = 0;
  const caller = async () => {
    while (next < count) {
      next++;
      hashes.push(await storage.transaction((tx) => ledger.record(tx, sessionStarted())));
      // Requests arrive through I/O, which lets the seal timer run; a loop of pure microtasks would starve it.
      if (hashes.length % 50 === 49) await new Promise((resolve) => setImmediate(resolve));
    }
  };
  const start = process.hrtime.bigint();
  const cpuStart = cpuMicros();
  await Promise.all(Array.from({ length: concurrency }, caller));
  return { hashes, ns: process.hrtime.bigint() - start, cpuUs: cpuMicros() - cpuStart };
}

/**
 * CPU time of this process (user + system) in µs. SQLite runs on this thread, so a receipt's
 * whole cost lands here; per CPU-second, rates hold up on a shared machine where wall rates
 * measure mostly the other tenants.
 */
function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

const perCpuSecond = (count: number, cpuUs: number) => Math.round(count / (cpuUs / 1e6));

async function signingKey() {
  const { privateKey } = (await generateKeyPair('ES256')) as unknown as { privateKey: webcrypto.CryptoKey };
  return { kid: 'bench', alg: 'ES256' as const, privateKey };
}

/** Appends on PostgreSQL (a fresh database on the local server), concurrent callers, sealer on. */
async function postgresAppends(): Promise<string[]> {
  const url = process.env['KEYPLANE_BENCH_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `kp_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch (error) {
    log(`  PostgreSQL at ${url} does not answer (${(error as Error).message}): skipped`);
    return [`| receipts appended on PostgreSQL | skipped: no server at ${url} |`];
  }
  await admin.query(`CREATE DATABASE ${name}`);
  const dbUrl = new URL(url);
  dbUrl.pathname = `/${name}`;
  const storage = await openPostgresStorage(dbUrl.toString());
  const key = await signingKey();
  const ledger = new Ledger({
    storage,
    signingKey: () => key,
    now: Date.now,
    sealIntervalMs: 1000,
    sealMaxReceipts: 10_000,
  });
  try {
    await ledger.start();
    const count = Math.min(RECEIPTS, 5000);
    log(`appending ${count} receipts on PostgreSQL, ${CONCURRENCY} callers, sealer on`);
    const { ns } = await appendAll(storage, ledger, count, CONCURRENCY);
    const sealStart = process.hrtime.bigint();
    await ledger.sealNow();
    const rate = count / (Number(ns + (process.hrtime.bigint() - sealStart)) / 1e9);
    const epochs = (await storage.receipts.latestCheckpoint())!.epoch;
    log(`  ${Math.round(rate)} receipts/s including sealing (${epochs} epochs)`);
    return [
      `| receipts appended on PostgreSQL (own transaction each, ${CONCURRENCY} callers, sealer on, ${count} receipts, ${epochs} epochs) | ${Math.round(rate)} receipts/s (target ≥ ${TARGET_APPENDS}: ${rate >= TARGET_APPENDS ? 'met' : 'not met'}) |`,
    ];
  } finally {
    await ledger.close();
    await storage.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

async function fullPath(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'keyplane-bench-ledger-'));
  const storage = openSqliteStorage(dir);
  const key = await signingKey();
  const ledger = new Ledger({
    storage,
    signingKey: () => key,
    now: Date.now,
    sealIntervalMs: 1000,
    sealMaxReceipts: 10_000,
  });
  try {
    await ledger.start();
    log(`appending ${RECEIPTS} receipts one after another, one transaction each, sealer on`);
    const serial = await appendAll(storage, ledger, RECEIPTS, 1);
    const serialRate = RECEIPTS / (Number(serial.ns) / 1e9);
    const serialPerCpu = perCpuSecond(RECEIPTS, serial.cpuUs);
    log(`  ${Math.round(serialRate)} receipts/s, ${serialPerCpu} per CPU-second`);
    log(`appending ${RECEIPTS} receipts from ${CONCURRENCY} callers at once, one transaction each, sealer on`);
    const concurrent = await appendAll(storage, ledger, RECEIPTS, CONCURRENCY);
    const hashes = [...serial.hashes, ...concurrent.hashes];
    const appendNs = concurrent.ns;
    const sealStart = process.hrtime.bigint();
    const sealCpuStart = cpuMicros();
    await ledger.sealNow();
    const sealNs = process.hrtime.bigint() - sealStart;
    const appendRate = RECEIPTS / (Number(appendNs + sealNs) / 1e9);
    const appendPerCpu = perCpuSecond(RECEIPTS, concurrent.cpuUs + cpuMicros() - sealCpuStart);
    const epochs = (await storage.receipts.latestCheckpoint())!.epoch;
    log(
      `  ${Math.round(appendRate)} receipts/s including sealing, ${appendPerCpu} per CPU-second (${epochs} epochs in all; target ≥ ${TARGET_APPENDS})`,
    );
    const sealed = (await Promise.all(hashes.map((hash) => storage.receipts.get(hash)))).filter(
      (r) => r?.epoch !== null && r !== undefined,
    );
    if (sealed.length !== hashes.length) throw new Error(`${hashes.length - sealed.length} receipts are not sealed`);

    // Baseline in the same run: a bare INSERT of a same-sized row, one transaction each, same pragmas.
    const raw = new Database(join(dir, 'raw.db'));
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = NORMAL');
    raw.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, hash TEXT UNIQUE, body TEXT)');
    const insert = raw.prepare('INSERT INTO t (hash, body) VALUES (?, ?)');
    const body = 'x'.repeat(330);
    const rawStart = process.hrtime.bigint();
    const rawCpuStart = cpuMicros();
    for (let i = 0; i < RECEIPTS; i++) {
      raw.exec('BEGIN IMMEDIATE');
      insert.run(randomBytes(32).toString('hex'), body);
      raw.exec('COMMIT');
      if (i % 50 === 49) await new Promise((resolve) => setImmediate(resolve));
    }
    const rawRate = RECEIPTS / (Number(process.hrtime.bigint() - rawStart) / 1e9);
    const rawPerCpu = perCpuSecond(RECEIPTS, cpuMicros() - rawCpuStart);
    raw.close();
    log(`  baseline: ${Math.round(rawRate)} bare inserts/s, ${rawPerCpu} per CPU-second`);

    const latencies: number[] = [];
    let pathLength = 0;
    for (let i = 0; i < 5000; i++) {
      const hash = hashes[Math.floor(Math.random() * hashes.length)]!;
      const t0 = process.hrtime.bigint();
      const found = await lookUpReceipt({ storage }, hash);
      latencies.push(ms(process.hrtime.bigint() - t0) * 1000);
      if ('proof' in found) pathLength = Math.max(pathLength, found.proof.path.length);
    }
    const unknown: number[] = [];
    for (let i = 0; i < 5000; i++) {
      const t0 = process.hrtime.bigint();
      await lookUpReceipt({ storage }, randomBytes(32).toString('hex')).catch(() => undefined);
      unknown.push(ms(process.hrtime.bigint() - t0) * 1000);
    }
    latencies.sort((a, b) => a - b);
    unknown.sort((a, b) => a - b);
    log(`  look-up p50 ${percentile(latencies, 50).toFixed(1)} µs, p99 ${percentile(latencies, 99).toFixed(1)} µs`);
    return [
      `| receipts appended on SQLite, one caller (own transaction each, sealer on, ${RECEIPTS} receipts) | ${Math.round(serialRate)} receipts/s; ${serialPerCpu} per CPU-second |`,
      `| receipts appended on SQLite, ${CONCURRENCY} callers (own transaction each, group commit, sealer on, ${RECEIPTS} receipts, ${epochs} epochs in the run) | **${Math.round(appendRate)} receipts/s** (target ≥ ${TARGET_APPENDS}: ${appendRate >= TARGET_APPENDS ? 'met' : 'not met'}); **${appendPerCpu} per CPU-second** (${appendPerCpu >= TARGET_APPENDS ? 'met' : 'not met'} on a free core) |`,
      `| baseline: bare SQLite INSERT of a same-sized row, own transaction each | ${Math.round(rawRate)} rows/s, ${rawPerCpu} per CPU-second (concurrent receipts at ${((appendRate / rawRate) * 100).toFixed(0)} % of it by wall rate, ${((appendPerCpu / rawPerCpu) * 100).toFixed(0)} % per CPU-second) |`,
      `| final seal of the pending remainder | ${ms(sealNs).toFixed(0)} ms |`,
      `| proof look-up by hash (sealed, ${RECEIPTS} stored; store + JSON, no HTTP) | p50 ${percentile(latencies, 50).toFixed(1)} µs, p99 ${percentile(latencies, 99).toFixed(1)} µs |`,
      `| look-up of an unknown hash (404 path) | p50 ${percentile(unknown, 50).toFixed(1)} µs, p99 ${percentile(unknown, 99).toFixed(1)} µs |`,
      `| longest audit path seen | ${pathLength} hashes |`,
    ];
  } finally {
    await ledger.close();
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function pureTrees(): string[] {
  const rows: string[] = [];
  for (const size of [10, 100, 1_000, 10_000, 100_000, 1_000_000].filter((n) => n <= TREES_UP_TO)) {
    const keys = Array.from({ length: size }, () => treeKeyOf(randomBytes(32)));
    const t0 = process.hrtime.bigint();
    const tree = buildSortedMerkleTree(keys);
    const root = treeRoot(tree);
    const buildMs = ms(process.hrtime.bigint() - t0);
    let longest = 0;
    const verifyUs: number[] = [];
    const probes = 1000;
    for (let i = 0; i < probes; i++) {
      const index = Math.floor(Math.random() * size);
      const path = auditPath(tree, index);
      longest = Math.max(longest, path.length);
      const hex = path.map(toHex);
      const v0 = process.hrtime.bigint();
      if (!verifyInclusionProof({ key: tree.keys[index]!, index, size, path: hex, root }))
        throw new Error('a proof did not verify');
      verifyUs.push(Number(process.hrtime.bigint() - v0) / 1000);
    }
    const oneShot = (nodeCrypto as unknown as { hash: (alg: string, data: Uint8Array, enc: 'buffer') => Buffer }).hash;
    const input = Buffer.alloc(65);
    const b0 = process.hrtime.bigint();
    for (let i = 0; i < 2 * size; i++) oneShot('sha256', input, 'buffer');
    const baselineMs = ms(process.hrtime.bigint() - b0);
    const proofJson = JSON.stringify({
      epoch: 1,
      index: size - 1,
      size,
      path: auditPath(tree, size - 1).map(toHex),
    }).length;
    log(`  size ${size}: build ${buildMs.toFixed(0)} ms, path ≤ ${longest}, log2 ${Math.log2(size).toFixed(2)}`);
    rows.push(
      `| ${size.toLocaleString('en')} | ${Math.log2(size).toFixed(2)} | ${longest} | ${longest * 32} B | ${proofJson} B | ${buildMs.toFixed(0)} ms | ${baselineMs.toFixed(0)} ms | ${percentile(
        verifyUs.sort((a, b) => a - b),
        50,
      ).toFixed(1)} µs |`,
    );
  }
  return rows;
}

const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node.js ${process.version}, load average ${loadavg()[0]!.toFixed(1)} at start`;
log(`machine: ${machine}`);
const full = [
  ...(await fullPath()),
  ...(await postgresAppends()),
  ...(await subscriberCosts()),
  ...(await transparencyCosts()),
];
log('sorted trees with the pure functions');
const pure = pureTrees();
process.stdout.write(
  [
    `Machine: ${machine}.`,
    '',
    '| measure | result |',
    '|---|---|',
    ...full,
    '',
    'Sorted Merkle trees built with `lib/ledger` alone (keys sorted, RFC 9162 tree, 1,000 random audit paths per size):',
    '',
    '| epoch size | log2(size) | longest path | path bytes | proof JSON | sort + build | baseline: 2n bare SHA-256 | verify one proof (median) |',
    '|---|---|---|---|---|---|---|---|',
    ...pure,
    '',
  ].join('\n'),
);
