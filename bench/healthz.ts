/**
 * bench:healthz — `GET /healthz` through Keyplane's whole request pipeline (the control plane on
 * SQLite in a temporary data dir: request id, hooks, error handling, security headers, metrics,
 * the access log line) against the same route on a bare fastify, in one run. It measures what
 * every machine endpoint pays before its own work; the target (docs/performance.md) is Keyplane
 * ≥ 0.7× the bare fastify.
 *
 * Each server runs in its own child process; the load generator (an undici Pool, keep-alive,
 * BENCH_CONNECTIONS at a time, default 16) runs here. The two are driven in alternating rounds
 * (BENCH_ROUNDS, default 5, of BENCH_SECONDS each, default 2, the order swapped every round), so
 * that both see the same load. Each round reports requests per second of wall time and each
 * server's CPU time per request (its `process.cpuUsage()` before and after the timed part), which
 * holds up on a shared machine where the wall rate follows the load. Every response is checked
 * (200 and `"status":"alive"`). Keyplane writes its access log as in production (standard error,
 * buffered, lib/runtime/log-destination.ts), with the child's standard error on /dev/null: pino's
 * cost counts, the lines are not kept.
 * The target is judged on requests per second, as the issue states it; the ratio per CPU-second
 * is printed beside it (on two cores the load generator competes with the server, so the wall
 * ratio also says how much of a core the generator left, and the CPU ratio is the stricter one).
 * BENCH_PROFILE=dir writes V8 CPU profiles of both servers.
 * BENCH_BASELINE=<another checkout> adds that checkout's control plane (forked from its own
 * bench/healthz.ts, which needs its own node_modules) to the same alternating rounds: a
 * before/after of the request pipeline in one run.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Pool } from 'undici';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 2);
const ROUNDS = Math.max(1, Number(process.env['BENCH_ROUNDS'] ?? 5));
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 16);
/** Seconds of untimed load on each server first: the JIT settles before anything is timed. */
const WARM_UP = Number(process.env['BENCH_WARMUP'] ?? 5);
const TARGET = 0.7;
const role = process.argv[2];

async function serve(): Promise<void> {
  process.on('message', (message) => {
    if (message === 'cpu') {
      const usage = process.cpuUsage();
      process.send!({ cpu: usage.user + usage.system });
    }
  });
  if (role === 'bare') {
    // The baseline: fastify's defaults and the same route, schema and answer.
    const { default: Fastify } = await import('fastify');
    const { okObject } = await import('../control-plane/src/http/schemas.js');
    const app = Fastify();
    process.on('disconnect', () => void app.close().finally(() => process.exit(0)));
    app.get('/healthz', { schema: { response: { 200: okObject({ status: { type: 'string' } }) } } }, async () => ({
      ok: true,
      status: 'alive',
    }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    app.server.keepAliveTimeout = 60_000;
    process.send!({ url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` });
    return;
  }
  // role === 'keyplane': the real control plane, as `keyplane control-plane` starts it.
  const { loadControlPlaneConfig } = await import('#config/load.js');
  const { startControlPlane } = await import('../control-plane/src/server.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'keyplane-bench-healthz-'));
  const config = loadControlPlaneConfig({
    env: {},
    overrides: {
      port: 0,
      dataDir,
      ...(process.env['BENCH_LOG_LEVEL'] ? { logLevel: process.env['BENCH_LOG_LEVEL'] } : {}),
    } as never,
  });
  const running = await startControlPlane(config, { warn: () => undefined });
  running.app.server.keepAliveTimeout = 60_000;
  process.on('disconnect', () => {
    void running.close().finally(() => {
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
  });
  const address = running.app.server.address() as { port: number };
  process.send!({ url: `http://127.0.0.1:${address.port}` });
}

interface Server {
  name: string;
  child: ChildProcess;
  url: string;
}

interface Result {
  requests: number;
  seconds: number;
  cpuUs: number;
  errors: number;
}

/** Another checkout whose control plane is the before of a before/after (BENCH_BASELINE). */
const BASELINE = process.env['BENCH_BASELINE'];

async function start(kind: string, file = new URL(import.meta.url).pathname, name = kind): Promise<Server> {
  // BENCH_PROFILE=dir writes V8 CPU profiles of both servers there.
  const profile = process.env['BENCH_PROFILE'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_PROFILE']}`] : [];
  const child = fork(file, [kind], {
    execArgv: ['--import', 'tsx', ...profile],
    // Keyplane's standard error is its log: written as in production, then dropped (/dev/null).
    stdio: ['ignore', 'inherit', kind === 'keyplane' ? 'ignore' : 'inherit', 'ipc'],
  });
  const [message] = (await once(child, 'message')) as [{ url: string }];
  return { name, child, url: message.url };
}

async function cpuOf(child: ChildProcess): Promise<number> {
  child.send('cpu');
  for (;;) {
    const [message] = (await once(child, 'message')) as [{ cpu?: number }];
    if (typeof message.cpu === 'number') return message.cpu;
  }
}

/** CONNECTIONS callers asking `/healthz` one after another until `seconds` have passed. */
async function drive(pool: Pool, seconds: number): Promise<{ requests: number; errors: number }> {
  let requests = 0;
  let errors = 0;
  const until = performance.now() + seconds * 1000;
  const caller = async () => {
    while (performance.now() < until) {
      const res = await pool.request({ path: '/healthz', method: 'GET' });
      const body = await res.body.text();
      if (res.statusCode !== 200 || !body.includes('"status":"alive"')) errors++;
      requests++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, caller));
  return { requests, errors };
}

async function round(server: Server, pool: Pool): Promise<Result> {
  const before = await cpuOf(server.child);
  const started = performance.now();
  const { requests, errors } = await drive(pool, SECONDS);
  const seconds = (performance.now() - started) / 1000;
  const cpuUs = (await cpuOf(server.child)) - before;
  return { requests, seconds, cpuUs, errors };
}

const loadLine = () =>
  `load ${loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')}`;

async function main(): Promise<void> {
  process.stdout.write(
    `bench:healthz — ${WARM_UP}s warm-up, then ${ROUNDS} alternating rounds of ${SECONDS}s per server, ${CONNECTIONS} connections, Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, ${loadLine()}\n`,
  );
  const servers = [await start('keyplane'), await start('bare')];
  if (BASELINE) servers.push(await start('keyplane', join(resolve(BASELINE), 'bench/healthz.ts'), 'keyplane before'));
  const pools = servers.map((s) => new Pool(s.url, { connections: CONNECTIONS, pipelining: 1 }));
  const totals = servers.map(() => ({ requests: 0, seconds: 0, cpuUs: 0, errors: 0 }));
  const rate = (r: Result) => r.requests / r.seconds;
  const cpuPerRequest = (r: Result) => r.cpuUs / r.requests;
  try {
    for (const pool of pools) await drive(pool, WARM_UP);
    for (let r = 1; r <= ROUNDS; r++) {
      // Each round in another order, so no server always follows the same one.
      const order = servers.map((_, i) => (i + r) % servers.length);
      const results: Result[] = [];
      for (const i of order) results[i] = await round(servers[i]!, pools[i]!);
      for (const [i, result] of results.entries()) {
        const total = totals[i]!;
        total.requests += result.requests;
        total.seconds += result.seconds;
        total.cpuUs += result.cpuUs;
        total.errors += result.errors;
      }
      process.stdout.write(
        `  round ${r}: ${results.map((result, i) => `${servers[i]!.name} ${Math.round(rate(result))}/s (${cpuPerRequest(result).toFixed(1)} µs CPU/req)`).join(', ')}\n`,
      );
    }
    const [ours, bare, before] = totals as [Result, Result, Result | undefined];
    const wall = rate(ours) / rate(bare);
    const perCpu = cpuPerRequest(bare) / cpuPerRequest(ours);
    process.stdout.write(
      [
        ...totals.map(
          (total, i) =>
            `  ${servers[i]!.name}: ${Math.round(rate(total))} req/s wall, ${Math.round(1e6 / cpuPerRequest(total))} per CPU-second`,
        ),
        `  keyplane ÷ bare: ${wall.toFixed(2)} in requests/s (target ≥ ${TARGET}: ${wall >= TARGET ? 'met' : 'not met'}), ${perCpu.toFixed(2)} per CPU-second of the server`,
        ...(before
          ? [
              `  keyplane ÷ keyplane before (${BASELINE}): ${(rate(ours) / rate(before)).toFixed(2)} in requests/s, ${(cpuPerRequest(before) / cpuPerRequest(ours)).toFixed(2)} per CPU-second (above 1: faster now)`,
            ]
          : []),
        ...(totals.some((total) => total.errors)
          ? [`  errors: ${totals.map((total, i) => `${servers[i]!.name} ${total.errors}`).join(', ')}`]
          : []),
        `# after: ${loadLine()}`,
        '',
      ].join('\n'),
    );
  } finally {
    for (const pool of pools) await pool.close();
    for (const server of servers) server.child.disconnect();
  }
}

if (role) await serve();
else await main();
