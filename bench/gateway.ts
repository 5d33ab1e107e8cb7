/**
 * bench:gateway — requests per second and p50/p99 latency, in one run on this machine, for
 * (a) a local upstream direct, (b) a bare http-proxy passthrough, (c) the edge-gate with an
 * encrypted cookie session (decrypt, policy, identity headers, cached assertion, undici hop);
 * (c0) is the gateway on a public route, the cost of its proxy hop alone.
 * Each server runs in its own child process; the load generator (undici, fixed concurrency,
 * keep-alive) runs here. The target is (c)/(b) >= 0.9 (issue 6). DPoP and nginx forward-auth
 * scenarios are still to be added.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { SignJWT, exportJWK } from 'jose';
import httpProxy from 'http-proxy';
import { Pool } from 'undici';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 32);
const role = process.argv[2];

async function serve(): Promise<void> {
  // The parent disconnects when it is done; exiting normally lets --cpu-prof write its profile.
  process.on('disconnect', () => process.exit(0));
  // CPU time per request holds up on a shared machine far better than requests per second.
  process.on('message', (message) => {
    if (message === 'cpu') {
      const usage = process.cpuUsage();
      process.send!({ cpu: usage.user + usage.system });
    }
  });
  if (role === 'upstream') {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('hello, world!');
    });
    server.keepAliveTimeout = 60_000;
    server.listen(0, '127.0.0.1', () => process.send!({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }));
    return;
  }
  const upstream = process.argv[3]!;
  if (role === 'http-proxy') {
    const proxy = httpProxy.createProxyServer({ target: upstream, agent: new (await import('node:http')).Agent({ keepAlive: true, maxSockets: 128 }) });
    const server = createServer((req, res) => proxy.web(req, res));
    server.keepAliveTimeout = 60_000;
    server.listen(0, '127.0.0.1', () => process.send!({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }));
    return;
  }
  // role === 'gateway'
  const { loadGatewayConfig } = await import('../config/load.js');
  const { startGateway } = await import('../gateway/src/server.js');
  const { writeSessionCookies } = await import('../lib/gateway/session-cookie.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'keyplane-bench-gw-'));
  process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));
  const config = loadGatewayConfig({ env: {}, overrides: { port: 0, dataDir, upstream, clientId: 'bench', logLevel: 'warn' } });
  const running = await startGateway(config);
  running.server.keepAliveTimeout = 60_000;
  const cp = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwks = { keys: [{ ...(await exportJWK(cp.publicKey)), kid: 'cp', alg: 'ES256' }] };
  const iat = Math.floor(Date.now() / 1000);
  const jws = await new SignJWT({ version: 1, gateway: { mode: 'enforce', routes: [{ path: '/', min_assurance: 'passkey' }, { path: '/public', public: true }] } })
    .setProtectedHeader({ alg: 'ES256', kid: 'cp', typ: 'keyplane-gateway-config+jwt' })
    .setIssuer(config.controlPlane).setAudience('bench').setIssuedAt(iat).setExpirationTime(iat + 3600).sign(cp.privateKey);
  await running.gateway.configHolder.accept(jws, jwks, Date.now());
  const cookies = await writeSessionCookies(
    { sid: randomUUID(), sub: 'usr_bench', principalType: 'human', assurance: 'passkey', scopes: ['openid'], email: 'bench@example.test', emailVerified: true },
    { keys: running.gateway.cookieKeys, now: Date.now(), secure: false, ttlSeconds: 3600 },
  );
  const address = running.server.address() as { port: number };
  process.send!({ url: `http://127.0.0.1:${address.port}`, cookie: cookies.map((line) => line.split(';')[0]).join('; ') });
}

interface Result { rps: number; p50: number; p99: number; errors: number; requests: number; cpuUs?: number }

async function cpuOf(child: ChildProcess): Promise<number> {
  child.send('cpu');
  for (;;) {
    const [message] = (await once(child, 'message')) as [{ cpu?: number }];
    if (typeof message.cpu === 'number') return message.cpu;
  }
}

async function measured(server: { child: ChildProcess; url: string }, headers: Record<string, string>, path = '/'): Promise<Result> {
  const before = await cpuOf(server.child);
  const result = await load(server.url, headers, path);
  const after = await cpuOf(server.child);
  return { ...result, cpuUs: (after - before) / result.requests };
}

async function load(url: string, headers: Record<string, string>, path = '/'): Promise<Result> {
  const pool = new Pool(url, { connections: CONNECTIONS, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  const run = async (until: number, record: boolean) => {
    while (performance.now() < until) {
      const start = performance.now();
      try {
        const res = await pool.request({ path, method: 'GET', headers });
        await res.body.dump();
        if (res.statusCode !== 200) errors++;
      } catch {
        errors++;
      }
      if (record) latencies.push(performance.now() - start);
    }
  };
  const warm = performance.now() + 1000;
  await Promise.all(Array.from({ length: CONNECTIONS }, () => run(warm, false)));
  const started = performance.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, () => run(started + SECONDS * 1000, true)));
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { rps: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), errors, requests: latencies.length };
}

async function start(kind: string, ...args: string[]): Promise<{ child: ChildProcess; url: string; cookie?: string }> {
  // BENCH_PROFILE=dir writes a V8 CPU profile of the gateway process there.
  const profile = kind === 'gateway' && process.env['BENCH_PROFILE'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_PROFILE']}`] : [];
  const child = fork(new URL(import.meta.url).pathname, [kind, ...args], { execArgv: ['--import', 'tsx', ...profile], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [message] = (await once(child, 'message')) as [{ url: string; cookie?: string }];
  return { child, ...message };
}

function line(name: string, r: Result): string {
  const cpu = r.cpuUs === undefined ? '' : `  cpu ${Math.round(r.cpuUs)} µs/req`;
  return `${name.padEnd(34)} ${Math.round(r.rps).toString().padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms${cpu}${r.errors ? `  errors ${r.errors}` : ''}`;
}

async function main(): Promise<void> {
  const upstream = await start('upstream');
  const proxy = await start('http-proxy', upstream.url);
  const gateway = await start('gateway', upstream.url);
  try {
    process.stdout.write(`# bench:gateway on ${cpus()[0]?.model ?? 'unknown CPU'} x${cpus().length}, node ${process.version}, ${CONNECTIONS} keep-alive connections, ${SECONDS} s each\n`);
    // BENCH_ONLY=gateway skips (a) and (b), e.g. to profile the gateway alone.
    const only = process.env['BENCH_ONLY'] === 'gateway';
    const direct = only ? undefined : await measured(upstream, {});
    if (direct) process.stdout.write(`${line('(a) upstream direct', direct)}\n`);
    const bare = only ? undefined : await measured(proxy, {});
    if (bare) process.stdout.write(`${line('(b) bare http-proxy passthrough', bare)}\n`);
    const floor = await measured(gateway, {}, '/public');
    process.stdout.write(`${line('(c0) gateway, public route', floor)}\n`);
    const session = await measured(gateway, { cookie: gateway.cookie!, accept: 'text/html' });
    process.stdout.write(`${line('(c) gateway, cookie session', session)}\n`);
    if (bare) process.stdout.write(`(c)/(b) = ${(session.rps / bare.rps).toFixed(2)} req/s (target >= 0.9); proxy-process CPU per request (c)/(b) = ${(session.cpuUs! / bare.cpuUs!).toFixed(2)}\n`);
  } finally {
    for (const child of [upstream.child, proxy.child, gateway.child]) child.disconnect();
  }
}

if (role) await serve();
else await main();
