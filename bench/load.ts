/**
 * bench:load — the control plane over real sockets, as `keyplane control-plane` runs it, with one
 * worker and with more (docs/performance.md#load-npm-run-benchload).
 *
 * Method: the control plane runs as its own process tree (the CLI, `--workers N` for each N of
 * BENCH_WORKERS, default "1,2"; SQLite in a throwaway data dir, or PostgreSQL when
 * BENCH_DATABASE_URL names a database; HTTPS with a throwaway self-signed certificate when
 * BENCH_TLS=1), the per-IP and per-account limits lifted (one generator is every client). The load
 * generator is undici's Pool in this process, BENCH_CONNECTIONS keep-alive connections (default
 * 32), each sending its next request when the last one answered (closed loop). Cases: the
 * client-credentials grant (RFC 6749 §4.4, a confidential client with `client_secret_basic`: an
 * ES256 access token signed per request) and introspection of an access token (RFC 7662). Each
 * case runs BENCH_ROUNDS rounds (default 3) of BENCH_SECONDS (default 5) after BENCH_WARMUP seconds
 * of untimed load (default 3), the servers alternating round by round so that load from elsewhere
 * falls on each alike. Printed per case and server: requests per second, p50 and p99 latency, the
 * CPU time of the whole server process tree per request (utime + stime of the primary and every
 * worker, from /proc), and so requests per CPU-second of the server and per vCPU of the machine
 * (requests per second ÷ vCPUs, the peers' figure), and the N-worker ÷ 1-worker ratio. The
 * generator shares the machine: on 2 cores it takes part of the second core. Every answer is
 * checked (200 and the expected member), so a failing request cannot look fast.
 *
 * Refresh grants, authorization-code exchanges and passkey sign-ins need a signed-in browser and
 * are not driven here yet (docs/performance.md#load-npm-run-benchload says what remains).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { CLI } from '../test/helpers/cli.js';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5);
const ROUNDS = Math.max(1, Number(process.env['BENCH_ROUNDS'] ?? 3));
const WARM_UP = Number(process.env['BENCH_WARMUP'] ?? 3);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 32);
const WORKERS = (process.env['BENCH_WORKERS'] ?? '1,2').split(',').map(Number);
const TLS = process.env['BENCH_TLS'] === '1';
const DATABASE_URL = process.env['BENCH_DATABASE_URL'];
const RESOURCE = 'https://api.load.example';
const ADMIN_TOKEN = 'bench-load-admin-token-0123456789abcdef';
const MASTER_KEY = 'bench-load-master-key-0123456789abcdef0123';
const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

const scratch = mkdtempSync(join(tmpdir(), 'keyplane-bench-load-'));

/** A self-signed certificate for localhost and 127.0.0.1 (openssl), for BENCH_TLS=1. */
function certificate(): { cert: string; key: string } {
  const cert = join(scratch, 'cert.pem');
  const key = join(scratch, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

interface Server {
  name: string;
  workers: number;
  child: ChildProcess;
  url: string;
  pool: Pool;
  client: { id: string; secret: string };
  accessToken: string;
}

async function start(workers: number, tls: { cert: string; key: string } | null): Promise<Server> {
  const dataDir = mkdtempSync(join(scratch, `data-${workers}-`));
  const config = join(dataDir, 'keyplane.yaml');
  writeFileSync(config, 'limits:\n  authPerIpPerMinute: 1000000\n  authPerAccountPerMinute: 1000000\n');
  const args = ['control-plane', '--port', '0', '--data', dataDir, '--config', config, '--workers', String(workers)];
  if (tls) args.push('--tls-cert', tls.cert, '--tls-key', tls.key);
  const child = spawn(process.execPath, [...CLI, ...args], {
    env: {
      ...process.env,
      KEYPLANE_ADMIN_TOKEN: ADMIN_TOKEN,
      KEYPLANE_MASTER_KEY: MASTER_KEY,
      ...(DATABASE_URL ? { KEYPLANE_DATABASE_URL: DATABASE_URL } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 120 s: ${out.slice(-500)}`)), 120_000);
    const look = (chunk: Buffer) => {
      out = (out + String(chunk)).slice(-20_000);
      const found = /listening (https?:\/\/\S+)/.exec(out);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]!.replace(/\/$/, ''));
      }
    };
    child.stdout!.on('data', look);
    child.stderr!.on('data', look);
    child.once('exit', (code) => reject(new Error(`the control plane exited ${code}: ${out.slice(-500)}`)));
  });
  // The log is read no further; keep draining it so the server never blocks on a full pipe.
  child.stdout!.resume();
  child.stderr!.resume();
  const pool = new Pool(url, {
    connections: CONNECTIONS,
    pipelining: 1,
    ...(tls ? { connect: { ca: readFileSync(tls.cert) } } : {}),
  });
  const registered = await json(
    pool,
    'POST',
    '/register',
    201,
    {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      'content-type': 'application/json',
    },
    JSON.stringify({
      client_name: 'Load',
      grant_types: ['client_credentials'],
      resources: [RESOURCE],
      token_endpoint_auth_method: 'client_secret_basic',
    }),
  );
  const client = { id: String(registered['client_id']), secret: String(registered['client_secret']) };
  // The API the tokens are for (docs/apis.md), admitting this client.
  await json(
    pool,
    'POST',
    '/admin/apis',
    201,
    { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    JSON.stringify({
      resource: RESOURCE,
      name: 'Load',
      scopes: [{ name: 'read', description: 'Read' }],
      allowed_clients: [client.id],
    }),
  );
  const server: Server = {
    name: `${workers} worker${workers > 1 ? 's' : ''}`,
    workers,
    child,
    url,
    pool,
    client,
    accessToken: '',
  };
  server.accessToken = String((await clientCredentials(server))['access_token']);
  return server;
}

async function json(
  pool: Pool,
  method: 'GET' | 'POST',
  path: string,
  status: number,
  headers: Record<string, string>,
  body?: string,
): Promise<Record<string, unknown>> {
  const res = await pool.request({ method, path, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.body.text();
  if (res.statusCode !== status) throw new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

const basic = (s: Server) =>
  `Basic ${Buffer.from(`${encodeURIComponent(s.client.id)}:${encodeURIComponent(s.client.secret)}`).toString('base64')}`;
const form = { 'content-type': 'application/x-www-form-urlencoded' };

async function clientCredentials(s: Server): Promise<Record<string, unknown>> {
  const body = await json(
    s.pool,
    'POST',
    '/auth/token',
    200,
    { ...form, authorization: basic(s) },
    `grant_type=client_credentials&resource=${encodeURIComponent(RESOURCE)}`,
  );
  if (typeof body['access_token'] !== 'string') throw new Error('client credentials: no access token');
  return body;
}

async function introspect(s: Server): Promise<void> {
  const body = await json(
    s.pool,
    'POST',
    '/auth/introspect',
    200,
    { ...form, authorization: basic(s) },
    `token=${s.accessToken}`,
  );
  if (body['active'] !== true) throw new Error('introspection: the access token is not active');
}

const CASES: Array<[string, (s: Server) => Promise<unknown>]> = [
  ['client-credentials grant', clientCredentials],
  ['introspection', introspect],
];

/** CPU seconds of the process tree under `pid` (the primary and its workers), from /proc. */
function treeCpuSeconds(pid: number): number {
  const stats = new Map<number, { parent: number; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // Fields after the name: state(0) ppid(1) … utime(11) stime(12).
      stats.set(Number(entry), { parent: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // The process ended while the table was read.
    }
  }
  let ticks = 0;
  for (const [p, s] of stats) {
    for (let q = p, hops = 0; q > 1 && hops < 32; q = stats.get(q)?.parent ?? 0, hops++)
      if (q === pid) {
        ticks += s.ticks;
        break;
      }
  }
  return ticks / TICKS_PER_SECOND;
}

interface Measured {
  requests: number;
  seconds: number;
  cpuSeconds: number;
  latencies: number[];
}

async function drive(s: Server, op: (s: Server) => Promise<unknown>, seconds: number): Promise<Measured> {
  const latencies: number[] = [];
  const cpuBefore = treeCpuSeconds(s.child.pid!);
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < until) {
        const t = performance.now();
        await op(s);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return {
    requests: latencies.length,
    seconds: elapsed,
    cpuSeconds: treeCpuSeconds(s.child.pid!) - cpuBefore,
    latencies,
  };
}

const quantile = (xs: number[], q: number) =>
  xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] ?? 0;

async function main(): Promise<void> {
  const vcpus = cpus().length;
  const load = () =>
    loadavg()
      .map((n) => n.toFixed(1))
      .join(' ');
  process.stdout.write(
    `bench:load — ${DATABASE_URL ? 'PostgreSQL' : 'SQLite'}, ${TLS ? 'HTTPS' : 'HTTP'}, workers ${WORKERS.join(' and ')}, ` +
      `${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s after ${WARM_UP} s warm-up, Node ${process.version}, ` +
      `${cpus()[0]?.model ?? 'cpu'} ×${vcpus}, load ${load()}\n`,
  );
  const tls = TLS ? certificate() : null;
  const servers: Server[] = [];
  try {
    for (const n of WORKERS) servers.push(await start(n, tls));
    const lines: string[] = [];
    for (const [name, op] of CASES) {
      for (const s of servers) await drive(s, op, WARM_UP);
      const totals = servers.map(() => ({ requests: 0, seconds: 0, cpuSeconds: 0, latencies: [] as number[] }));
      for (let r = 0; r < ROUNDS; r++) {
        const order = [...servers.keys()];
        if (r % 2) order.reverse();
        for (const i of order) {
          const m = await drive(servers[i]!, op, SECONDS);
          const total = totals[i]!;
          total.requests += m.requests;
          total.seconds += m.seconds;
          total.cpuSeconds += m.cpuSeconds;
          total.latencies.push(...m.latencies);
        }
      }
      lines.push(`\n${name}:\n`);
      lines.push(
        '| server | requests/s | p50 (ms) | p99 (ms) | CPU per request (ms) | per CPU-second | per vCPU |\n|---|---|---|---|---|---|---|\n',
      );
      totals.forEach((t, i) => {
        const rate = t.requests / t.seconds;
        lines.push(
          `| ${servers[i]!.name} | ${Math.round(rate)} | ${quantile(t.latencies, 0.5).toFixed(2)} | ${quantile(t.latencies, 0.99).toFixed(2)} | ` +
            `${((t.cpuSeconds / t.requests) * 1000).toFixed(3)} | ${Math.round(t.requests / t.cpuSeconds)} | ${Math.round(rate / vcpus)} |\n`,
        );
      });
      const one = totals[0]!;
      for (const [i, t] of totals.entries())
        if (i > 0)
          lines.push(
            `${servers[i]!.name} ÷ ${servers[0]!.name}: ${(t.requests / t.seconds / (one.requests / one.seconds)).toFixed(2)} in requests/s\n`,
          );
    }
    process.stdout.write(`${lines.join('')}\n# after: load ${load()}\n`);
  } finally {
    for (const s of servers) {
      await s.pool.close();
      s.child.kill('SIGTERM');
    }
    await Promise.all(
      servers.map((s) => (s.child.exitCode === null ? new Promise((r) => s.child.once('exit', r)) : null)),
    );
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
