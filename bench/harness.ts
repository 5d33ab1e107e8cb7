/**
 * What the in-process benchmarks share: the run length, a teardown list standing in for tap's,
 * the batched measuring loop and the raw ES256 bound (the bench:keys method).
 *
 * `measure` reports two rates: calls per second of wall time, and calls per second of this
 * process's CPU time (user + system, from `process.cpuUsage`). On a machine shared with other
 * work the wall rate falls with the load while the CPU rate stays close to what one free core
 * would do, so both are printed and the CPU rate is the one-core figure.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { buildSignedIn } from '../test/helpers/signed-in.js';

export const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5);

export interface Rate {
  /** Calls per second of wall time. */
  wall: number;
  /** Calls per second of this process's CPU time. */
  cpu: number;
  count: number;
}

export function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** A stand-in for tap's `t` for the test helpers: teardowns run by `runTeardowns`. */
export function benchTap(): { tap: { teardown(fn: () => unknown): void }; runTeardowns(): Promise<void> } {
  const teardowns: Array<() => unknown> = [];
  return {
    tap: { teardown: (fn) => void teardowns.push(fn) },
    runTeardowns: async () => {
      for (const fn of teardowns.reverse()) await fn();
    },
  };
}

/** One line naming the run's conditions (the load average says how shared the machine was). */
export function describeRun(name: string): void {
  const load = loadavg()
    .map((n) => n.toFixed(1))
    .join(' ');
  log(
    `${name} — ${SECONDS}s of timed work per case, Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, load ${load}, in-process (light-my-request), one request at a time`,
  );
}

/** Runs `op` for SECONDS of timed work; `prepare` (untimed) makes each batch's inputs. */
export async function measure<T>(
  name: string,
  prepare: (n: number) => Promise<T[]>,
  op: (input: T) => Promise<void>,
  batch = 300,
): Promise<Rate> {
  for (const input of await prepare(200)) await op(input); // warm-up: the JIT settles before timing
  let count = 0;
  let elapsedNs = 0n;
  let cpuUs = 0;
  while (elapsedNs < BigInt(SECONDS * 1e9)) {
    const inputs = await prepare(batch);
    const cpuStart = process.cpuUsage();
    const start = process.hrtime.bigint();
    for (const input of inputs) await op(input);
    elapsedNs += process.hrtime.bigint() - start;
    const used = process.cpuUsage(cpuStart);
    cpuUs += used.user + used.system;
    count += inputs.length;
  }
  const rate = { wall: count / (Number(elapsedNs) / 1e9), cpu: count / (cpuUs / 1e6), count };
  log(
    `  ${name}: ${Math.round(rate.wall)} /s wall, ${Math.round(rate.cpu)} /s per CPU-second (${count} in ${(Number(elapsedNs) / 1e9).toFixed(1)} s)`,
  );
  return rate;
}

/** One thing to time: `prepare` (untimed) makes a batch's inputs, `op` is the timed call. */
export interface BenchCase<T> {
  name: string;
  prepare(n: number): Promise<T[]>;
  op(input: T): Promise<void>;
}

/** Erases a case's input type so that cases of different inputs share one list. */
export const benchCase = <T>(c: BenchCase<T>): BenchCase<unknown> => c as BenchCase<unknown>;

/**
 * Runs the cases in alternating batches until each has had SECONDS of timed work, `inFlight`
 * calls of a batch at a time. On a shared machine the load changes from one second to the next;
 * interleaved, the cases see the same load, so the ratio between them holds up where runs one
 * after another would not. The order turns round every round, so that no case always follows the
 * same one (and pays for the garbage it left).
 */
export async function measureInterleaved(
  cases: Array<BenchCase<unknown>>,
  { batch = 50, inFlight = 1 }: { batch?: number; inFlight?: number } = {},
): Promise<Rate[]> {
  const totals = cases.map(() => ({ count: 0, elapsedNs: 0n, cpuUs: 0 }));
  for (const c of cases) await runAll(await c.prepare(200), c.op, inFlight); // warm-up
  for (let round = 0; totals.some((t) => t.elapsedNs < BigInt(SECONDS * 1e9)); round++) {
    const order = [...cases.entries()];
    if (round % 2) order.reverse();
    for (const [i, c] of order) {
      const inputs = await c.prepare(batch);
      const cpuStart = process.cpuUsage();
      const start = process.hrtime.bigint();
      await runAll(inputs, c.op, inFlight);
      totals[i]!.elapsedNs += process.hrtime.bigint() - start;
      const used = process.cpuUsage(cpuStart);
      totals[i]!.cpuUs += used.user + used.system;
      totals[i]!.count += inputs.length;
    }
  }
  return cases.map((c, i) => {
    const { count, elapsedNs, cpuUs } = totals[i]!;
    const rate = { wall: count / (Number(elapsedNs) / 1e9), cpu: count / (cpuUs / 1e6), count };
    log(
      `  ${c.name}: ${Math.round(rate.wall)} /s wall, ${Math.round(rate.cpu)} /s per CPU-second (${count} in ${(Number(elapsedNs) / 1e9).toFixed(1)} s)`,
    );
    return rate;
  });
}

/** Calls `op` on every input, `inFlight` calls at a time (requests in flight, as concurrent clients make them). */
async function runAll<T>(inputs: T[], op: (input: T) => Promise<void>, inFlight: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < inputs.length) await op(inputs[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, inputs.length) }, worker));
}

/** Raw node:crypto ES256 signatures per second: the bound a signing endpoint is judged against. */
export async function es256Bound(): Promise<Rate> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const input = Buffer.from(`${randomBytes(40).toString('base64url')}.${randomBytes(200).toString('base64url')}`);
  return measure(
    'raw node:crypto ES256 sign (the bound)',
    async (n) => Array.from({ length: n }, () => input),
    async (data) => {
      sign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
    },
  );
}

/**
 * A control plane in a fresh data directory with the per-IP and per-account limits lifted (a
 * benchmark is one client hammering one path), and a user `bench` signed in at `passkey`. Log
 * lines are written (pino's cost counts) but not kept.
 */
export async function benchControlPlane(
  tap: { teardown(fn: () => unknown): void },
  config: Record<string, unknown> = {},
) {
  const dataDir = mkdtempSync(join(tmpdir(), 'keyplane-bench-'));
  tap.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const built = await buildSignedIn(tap, {
    dataDir,
    discardLogs: true,
    config: { 'limits.authPerIpPerMinute': 1_000_000, 'limits.authPerAccountPerMinute': 1_000_000, ...config },
  });
  const { browser } = await built.signIn({ username: 'bench', assurance: 'passkey' });
  return { ...built, browser };
}

/**
 * A throwaway PostgreSQL database (`<prefix>_<pid>_<random>`) on `KEYPLANE_BENCH_POSTGRES_URL` (the
 * local server by default), dropped at teardown; null, with a line saying so, when no server answers.
 */
export async function postgresDatabase(
  tap: { teardown(fn: () => unknown): void },
  prefix: string,
): Promise<string | null> {
  const url = process.env['KEYPLANE_BENCH_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch (error) {
    log(`  PostgreSQL at ${url} does not answer (${(error as Error).message}): skipped`);
    return null;
  }
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  tap.teardown(async () => {
    const again = new pg.Client({ connectionString: url });
    await again.connect();
    await again.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await again.end();
  });
  const dbUrl = new URL(url);
  dbUrl.pathname = `/${name}`;
  return dbUrl.toString();
}
