/**
 * bench:gateway — requests per second and p50/p99 latency, in one run on this machine, for
 * (a) a local upstream direct, (b) a bare http-proxy passthrough, (c) the gateway with an
 * encrypted cookie session (decrypt, policy, identity headers, cached assertion, undici hop);
 * (c0) is the gateway on a public route, the cost of its proxy hop alone; (d) the gateway with a
 * DPoP-bound access token and a fresh proof per request, against the bound of one ES256
 * verification per request (a bare node:http server doing only that); (e) nginx `auth_request`
 * to the gateway's `/_gate/auth` in front of the upstream, against nginx alone; and the latency
 * of `/_gate/auth` under an open-loop load at a fixed rate (BENCH_RATE, default 1,000 req/s).
 * Each server runs in its own child process; the load generator (undici, fixed concurrency,
 * keep-alive) runs here. The targets (docs/performance.md): (c) >= 0.9x a bare undici Pool
 * passthrough of the same request (b2c: the browser's Cookie and Accept too), and (d) >= 0.8x one
 * raw ES256 verification before that passthrough (bound2), per CPU-second, median of three rounds.
 *
 * BENCH_BASELINE=<another checkout> also starts that checkout's gateway (forked from its own
 * bench/gateway.ts, which needs its own node_modules) and runs (c) and (d) on it in the same rounds,
 * back to back with this one in alternating order: a before/after of the gateway's request path in
 * one run (docs/performance.md#gateway-npm-run-benchgateway).
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPublicKey, generateKeyPairSync, randomUUID, verify, type JsonWebKey } from 'node:crypto';
import { SignJWT, compactVerify, createLocalJWKSet, exportJWK, importJWK, type JWK } from 'jose';
import httpProxy from 'http-proxy';
import { Pool } from 'undici';
import { computeAth } from '#lib/dpop/verify-dpop-proof.js';
import { startNginx } from '../test/helpers/nginx.js';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 32);
/** Rounds in which each target case runs back to back with its baseline (the median is judged). */
const ROUNDS = Math.max(1, Number(process.env['BENCH_ROUNDS'] ?? 3));
const role = process.argv[2];

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'host',
]);

/** A bare reverse proxy on an undici Pool (keep-alive), with an optional synchronous check first. */
function undiciPassthrough(upstream: string, check: ((req: IncomingMessage) => boolean) | null) {
  const pool = new Pool(upstream, { connections: 128 });
  const server = createServer((req, res) => {
    if (check && !check(req)) return void res.writeHead(401).end();
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    const body = req.method === 'GET' || req.method === 'HEAD' ? null : req;
    pool.request({ method: req.method as 'GET', path: req.url!, headers, body }).then(
      ({ statusCode, headers: answer, body: stream }) => {
        for (const name of HOP_BY_HOP) delete answer[name];
        res.writeHead(statusCode, answer as Record<string, string>);
        stream.pipe(res);
      },
      () => void res.writeHead(502).end(),
    );
  });
  server.keepAliveTimeout = 60_000;
  return server;
}

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
    server.listen(0, '127.0.0.1', () =>
      process.send!({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }),
    );
    return;
  }
  if (role === 'es256') {
    // The bound for (d): one ES256 verification (jose, the gateway's library) of the request's DPoP proof, nothing else.
    const key = await importJWK(JSON.parse(process.argv[3]!) as JWK, 'ES256');
    const server = createServer((req, res) => {
      compactVerify(String(req.headers['dpop']), key, { algorithms: ['ES256'] }).then(
        () => {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('hello, world!');
        },
        () => {
          res.writeHead(401);
          res.end();
        },
      );
    });
    server.keepAliveTimeout = 60_000;
    server.listen(0, '127.0.0.1', () =>
      process.send!({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }),
    );
    return;
  }
  const upstream = process.argv[3]!;
  if (role === 'undici' || role === 'es256-undici') {
    // The issue's baseline: a bare undici Pool passthrough, and the DPoP bound: one raw node:crypto
    // ES256 verification of the proof (key imported once) before the same passthrough.
    const key =
      role === 'es256-undici'
        ? createPublicKey({ key: JSON.parse(process.argv[4]!) as JsonWebKey, format: 'jwk' })
        : null;
    const server = undiciPassthrough(
      upstream,
      key &&
        ((req) => {
          const proof = String(req.headers['dpop']);
          const dot = proof.lastIndexOf('.');
          return verify(
            'sha256',
            Buffer.from(proof.slice(0, dot)),
            { key, dsaEncoding: 'ieee-p1363' },
            Buffer.from(proof.slice(dot + 1), 'base64url'),
          );
        }),
    );
    server.listen(0, '127.0.0.1', () =>
      process.send!({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }),
    );
    return;
  }
  if (role === 'http-proxy') {
    const proxy = httpProxy.createProxyServer({
      target: upstream,
      agent: new (await import('node:http')).Agent({ keepAlive: true, maxSockets: 128 }),
    });
    const server = createServer((req, res) => proxy.web(req, res));
    server.keepAliveTimeout = 60_000;
    server.listen(0, '127.0.0.1', () =>
      process.send!({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }),
    );
    return;
  }
  // role === 'gateway'
  const { loadGatewayConfig } = await import('#config/load.js');
  const { startGateway } = await import('../gateway/src/server.js');
  const { writeSessionCookies } = await import('#lib/gateway-protocol/session-cookie.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'keyplane-bench-gw-'));
  process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));
  const config = loadGatewayConfig({
    env: {},
    overrides: { port: 0, dataDir, upstream, clientId: 'bench', logLevel: 'warn' },
  });
  const cp = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwks = { keys: [{ ...(await exportJWK(cp.publicKey)), kid: 'cp', alg: 'ES256' }] };
  const running = await startGateway(config, { controlPlaneKeys: createLocalJWKSet(jwks) });
  running.server.keepAliveTimeout = 60_000;
  const iat = Math.floor(Date.now() / 1000);
  const jws = await new SignJWT({
    version: 1,
    gateway: {
      mode: 'enforce',
      routes: [
        { path: '/', min_assurance: 'passkey' },
        { path: '/public', public: true },
        { path: '/api', dpop: 'required' },
      ],
    },
  })
    .setProtectedHeader({ alg: 'ES256', kid: 'cp', typ: 'keyplane-gateway-config+jwt' })
    .setIssuer(config.controlPlane)
    .setAudience('bench')
    .setIssuedAt(iat)
    .setExpirationTime(iat + 3600)
    .sign(cp.privateKey);
  await running.gateway.configHolder.accept(jws, jwks, Date.now());
  const cookies = await writeSessionCookies(
    {
      sid: randomUUID(),
      sub: 'usr_bench',
      principalType: 'human',
      assurance: 'passkey',
      scopes: ['openid'],
      email: 'bench@example.test',
      emailVerified: true,
    },
    { keys: running.gateway.cookieKeys, now: Date.now(), secure: false, ttlSeconds: 3600 },
  );
  // (d): a DPoP-bound access token as the control plane would issue it; the parent signs the proofs.
  const dpop = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const dpopJwk = await exportJWK(dpop.publicKey);
  const { calculateJwkThumbprint } = await import('jose');
  const token = await new SignJWT({
    scope: 'read',
    acr: 'passkey',
    client_id: 'bench',
    svc: { assurance: 'passkey', principal: { type: 'human', id: 'usr_bench' } },
    cnf: { jkt: await calculateJwkThumbprint(dpopJwk) },
  })
    .setProtectedHeader({ alg: 'ES256', kid: 'cp', typ: 'at+jwt' })
    .setIssuer(config.controlPlane)
    .setAudience(running.url)
    .setSubject('usr_bench')
    .setIssuedAt(iat)
    .setExpirationTime(iat + 3600)
    .setJti(randomUUID())
    .sign(cp.privateKey);
  const address = running.server.address() as { port: number };
  process.send!({
    url: `http://127.0.0.1:${address.port}`,
    cookie: cookies.map((line) => line.split(';')[0]).join('; '),
    publicUrl: running.url,
    token,
    dpopJwk: await exportJWK(dpop.privateKey),
  });
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  requests: number;
  cpuUs?: number;
}

async function cpuOf(child: ChildProcess): Promise<number> {
  child.send('cpu');
  for (;;) {
    const [message] = (await once(child, 'message')) as [{ cpu?: number }];
    if (typeof message.cpu === 'number') return message.cpu;
  }
}

type Headers = Record<string, string> | (() => Promise<Record<string, string>>);

/** `load` against a child process, with the child's CPU time per request of the timed part (not the warm-up). */
async function measured(server: { child: ChildProcess; url: string }, headers: Headers, path = '/'): Promise<Result> {
  let before = 0;
  const result = await load(server.url, headers, path, async () => void (before = await cpuOf(server.child)));
  const after = await cpuOf(server.child);
  return { ...result, cpuUs: (after - before) / result.requests };
}

async function load(
  url: string,
  headersOf: Headers,
  path = '/',
  afterWarmUp: () => Promise<void> = async () => undefined,
): Promise<Result> {
  const pool = new Pool(url, { connections: CONNECTIONS, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  const run = async (until: number, record: boolean) => {
    while (performance.now() < until) {
      const start = performance.now();
      try {
        const headers = typeof headersOf === 'function' ? await headersOf() : headersOf;
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
  await afterWarmUp();
  const started = performance.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, () => run(started + SECONDS * 1000, true)));
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { rps: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), errors, requests: latencies.length };
}

/**
 * Open-loop load at a fixed rate: request i is due at `start + i / rate` and is sent then whether
 * or not earlier ones have answered (never before it is due), so a slow answer never delays the
 * schedule (coordinated omission). Latency counts from when the request was sent, including any
 * wait for a free connection; how late the sender itself ran behind the schedule is reported
 * apart, because timer granularity (about 1 ms) would otherwise swamp a sub-millisecond answer.
 */
async function fixedRate(
  url: string,
  headers: Record<string, string>,
  path: string,
  rate: number,
  seconds: number,
): Promise<{ p50: number; p99: number; max: number; sent: number; errors: number; achieved: number; maxLag: number }> {
  const pool = new Pool(url, { connections: 256, pipelining: 1 });
  const total = Math.round(rate * seconds);
  const latencies: number[] = [];
  const inflight: Promise<void>[] = [];
  let errors = 0;
  let maxLag = 0;
  const started = performance.now();
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    for (let wait = due - performance.now(); wait > 0; wait = due - performance.now()) await sleep(Math.ceil(wait));
    const sent = performance.now();
    maxLag = Math.max(maxLag, sent - due);
    inflight.push(
      pool.request({ path, method: 'GET', headers }).then(
        async (res) => {
          await res.body.dump();
          if (res.statusCode !== 200) errors++;
          latencies.push(performance.now() - sent);
        },
        () => {
          errors++;
        },
      ),
    );
  }
  await Promise.all(inflight);
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    p50: at(0.5),
    p99: at(0.99),
    max: latencies.at(-1) ?? 0,
    sent: total,
    errors,
    achieved: total / elapsed,
    maxLag,
  };
}

/** DPoP proofs for one key and URL, signed before the timed run (each is single-use, oldest first); signed on the spot, and counted, if they run out. */
async function proofMaker(
  privateJwk: JWK,
  htu: string,
  token: string,
): Promise<{ fill(count: number): Promise<void>; next(): Promise<Record<string, string>>; extra(): number }> {
  const { d: _d, ...publicJwk } = privateJwk;
  const key = await importJWK(privateJwk, 'ES256');
  const ath = computeAth(token);
  const sign = () =>
    new SignJWT({ htm: 'GET', htu, jti: randomUUID(), ath })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: publicJwk })
      .setIssuedAt()
      .sign(key);
  let ready: string[] = [];
  let taken = 0;
  let extra = 0;
  const authorization = `DPoP ${token}`;
  return {
    async fill(count) {
      ready = [];
      taken = 0;
      extra = 0;
      for (let i = 0; i < count; i++) ready.push(await sign());
    },
    async next() {
      const proof = ready[taken++];
      if (proof !== undefined) return { authorization, dpop: proof };
      extra++;
      return { authorization, dpop: await sign() };
    },
    extra: () => extra,
  };
}

// ---------- nginx for (e) ----------
/** nginx (one worker, keep-alive to both peers) in front of the upstream, with or without auth_request to the gateway. */
async function startBenchNginx(
  upstream: string,
  gateway: string | undefined,
): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'keyplane-bench-nginx-'));
  const auth = gateway
    ? `auth_request /_gate_auth;
      auth_request_set $kp_subject $upstream_http_x_auth_subject;
      auth_request_set $kp_assertion $upstream_http_x_auth_assertion;
      proxy_set_header X-Auth-Subject $kp_subject;
      proxy_set_header X-Auth-Assertion $kp_assertion;`
    : '';
  const nginx = await startNginx({
    dir,
    http: `keepalive_requests 1000000;
  upstream app { server ${new URL(upstream).host}; keepalive 64; }
  ${gateway ? `upstream gate { server ${new URL(gateway).host}; keepalive 64; }` : ''}`,
    server: `${
      gateway
        ? `location = /_gate_auth {
      internal;
      proxy_pass http://gate/_gate/auth;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URI $request_uri;
      proxy_set_header X-Original-Method $request_method;
    }`
        : ''
    }
    location / {
      ${auth}
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_pass http://app;
    }`,
  });
  return {
    url: nginx.url,
    async stop() {
      await nginx.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Pins the load generator to CPU 0 and the gateway (all its threads) to CPU 1 with taskset; returns the undo, or null when it cannot. */
function pinApart(generator: number, server: number | undefined): (() => void) | null {
  if (cpus().length < 2 || server === undefined) return null;
  const pin = (cpus: string, pid: number) =>
    spawnSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' }).status === 0;
  if (!pin('0', generator) || !pin('1', server)) return null;
  const all = `0-${cpus().length - 1}`;
  return () => {
    pin(all, generator);
    pin(all, server);
  };
}

function loadLine(): string {
  return `load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}`;
}

interface Started {
  child: ChildProcess;
  url: string;
  cookie?: string;
  publicUrl?: string;
  token?: string;
  dpopJwk?: JWK;
}

/** Another checkout's bench:gateway, whose gateway is the before of a before/after (BENCH_BASELINE). */
const BASELINE = process.env['BENCH_BASELINE'];

async function start(kind: string, ...args: string[]): Promise<Started> {
  return startFrom(new URL(import.meta.url).pathname, kind, ...args);
}

async function startFrom(file: string, kind: string, ...args: string[]): Promise<Started> {
  // BENCH_PROFILE=dir writes a V8 CPU profile of the gateway process there.
  const profile =
    kind === 'gateway' && process.env['BENCH_PROFILE']
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_PROFILE']}`]
      : [];
  const child = fork(file, [kind, ...args], {
    execArgv: ['--import', 'tsx', ...profile],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [message] = (await once(child, 'message')) as [Omit<Started, 'child'>];
  return { child, ...message };
}

function line(name: string, r: Result): string {
  const cpu =
    r.cpuUs === undefined
      ? ''
      : `  cpu ${Math.round(r.cpuUs)} µs/req (${Math.round(1e6 / r.cpuUs)} req per CPU-second)`;
  return `${name.padEnd(34)} ${Math.round(r.rps).toString().padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms${cpu}${r.errors ? `  errors ${r.errors}` : ''}`;
}

async function main(): Promise<void> {
  const upstream = await start('upstream');
  const proxy = await start('http-proxy', upstream.url);
  const gateway = await start('gateway', upstream.url);
  const { d: _d, ...dpopPublic } = gateway.dpopJwk!;
  const bound = await start('es256', JSON.stringify(dpopPublic));
  const undici = await start('undici', upstream.url);
  const rawBound = await start('es256-undici', upstream.url, JSON.stringify(dpopPublic));
  const before = BASELINE
    ? await startFrom(join(resolve(BASELINE), 'bench/gateway.ts'), 'gateway', upstream.url)
    : null;
  const stops: Array<() => Promise<void>> = [];
  try {
    process.stdout.write(
      `# bench:gateway on ${cpus()[0]?.model ?? 'unknown CPU'} x${cpus().length}, node ${process.version}, ${CONNECTIONS} keep-alive connections, ${SECONDS} s each\n`,
    );
    process.stdout.write(`# before: ${loadLine()} (1, 5, 15 min; figures from a loaded machine are indicative only)\n`);
    // BENCH_ONLY=dpop runs (d) alone, three times (to profile the DPoP path with BENCH_PROFILE).
    if (process.env['BENCH_ONLY'] === 'dpop') {
      const path = '/api/items';
      const proofs = await proofMaker(gateway.dpopJwk!, `${gateway.publicUrl}${path}`, gateway.token!);
      for (let pass = 1; pass <= 3; pass++) {
        await proofs.fill(8000 * (SECONDS + 1));
        process.stdout.write(
          `${line(`(d) gateway, DPoP-bound token, pass ${pass}`, await measured(gateway, () => proofs.next(), path))}\n`,
        );
      }
      return;
    }
    // BENCH_ONLY=cookie runs (c) alone, three times (to profile the cookie path with BENCH_PROFILE).
    if (process.env['BENCH_ONLY'] === 'cookie') {
      for (let pass = 1; pass <= 3; pass++) {
        const result = await measured(gateway, { cookie: gateway.cookie!, accept: 'text/html' });
        process.stdout.write(`${line(`(c) gateway, cookie session, pass ${pass}`, result)}\n`);
      }
      return;
    }
    // BENCH_ONLY=gateway skips (a) and (b), e.g. to profile the gateway alone.
    const only = process.env['BENCH_ONLY'] === 'gateway';
    const direct = only ? undefined : await measured(upstream, {});
    if (direct) process.stdout.write(`${line('(a) upstream direct', direct)}\n`);
    const bare = only ? undefined : await measured(proxy, {});
    if (bare) process.stdout.write(`${line('(b) bare http-proxy passthrough', bare)}\n`);
    const pool = only ? undefined : await measured(undici, {});
    if (pool) process.stdout.write(`${line('(b2) bare undici Pool passthrough', pool)}\n`);
    // (c)'s baseline proxies the very request (c) gets: the browser's Cookie and Accept headers
    // are parsed and forwarded by the bare proxy too, so the ratio measures the gateway's work,
    // not the size of the request (measured: 13-17 µs per request on this VM).
    const browserHeaders = { cookie: gateway.cookie!, accept: 'text/html' };
    const poolSame = only ? undefined : await measured(undici, browserHeaders);
    if (poolSame) process.stdout.write(`${line("(b2c) the same, (c)'s request", poolSame)}\n`);
    const floor = await measured(gateway, {}, '/public');
    process.stdout.write(`${line('(c0) gateway, public route', floor)}\n`);
    const session = await measured(gateway, browserHeaders);
    process.stdout.write(`${line('(c) gateway, cookie session', session)}\n`);

    // /_gate/auth latency at a fixed rate (open loop), as a proxy would call it; before (d), whose
    // tens of thousands of single-use proofs fill the in-process replay cache. With
    // BENCH_PIN=1 the sender and the gateway get one CPU each for this part.
    const unpin = process.env['BENCH_PIN'] === '1' ? pinApart(process.pid, gateway.child.pid) : null;
    if (unpin) process.stdout.write('# fixed rate: load generator pinned to CPU 0, gateway to CPU 1\n');
    const rate = Number(process.env['BENCH_RATE'] ?? 1000);
    const fixed = await fixedRate(
      gateway.url,
      { cookie: gateway.cookie!, 'x-forwarded-uri': '/app', 'x-forwarded-method': 'GET' },
      '/_gate/auth',
      rate,
      SECONDS,
    );
    process.stdout.write(
      `/_gate/auth at ${rate} req/s (open loop, ${fixed.sent} requests, achieved ${Math.round(fixed.achieved)}/s): p50 ${fixed.p50.toFixed(2)} ms  p99 ${fixed.p99.toFixed(2)} ms  max ${fixed.max.toFixed(2)} ms  (sender at most ${fixed.maxLag.toFixed(1)} ms behind schedule)${fixed.errors ? `  errors ${fixed.errors}` : ''}\n`,
    );
    unpin?.();

    // (d) and its bound: every request carries a fresh single-use proof, signed here beforehand.
    const path = '/api/items';
    const proofs = await proofMaker(gateway.dpopJwk!, `${gateway.publicUrl}${path}`, gateway.token!);
    const budget = Math.round(Math.max(8000, (bare?.rps ?? 0) * 1.5) * (SECONDS + 1));
    await proofs.fill(budget);
    const dpop = await measured(gateway, () => proofs.next(), path);
    process.stdout.write(
      `${line('(d) gateway, DPoP-bound token', dpop)}${proofs.extra() ? `  (${proofs.extra()} proofs signed during the run: raise the budget)` : ''}\n`,
    );
    await proofs.fill(budget);
    const verifyBound = await measured(bound, () => proofs.next(), path);
    process.stdout.write(
      `${line('bound: one ES256 verify per request', verifyBound)}${proofs.extra() ? `  (${proofs.extra()} proofs signed during the run: raise the budget)` : ''}\n`,
    );
    await proofs.fill(budget);
    const rawVerifyProxy = await measured(rawBound, () => proofs.next(), path);
    process.stdout.write(
      `${line('bound2: raw ES256 verify + undici', rawVerifyProxy)}${proofs.extra() ? `  (${proofs.extra()} proofs signed during the run: raise the budget)` : ''}\n`,
    );

    // (e) nginx auth_request to the gateway vs nginx alone, both with the cookie session.
    let nginxAlone: Result | undefined;
    let nginxGate: Result | undefined;
    if (spawnSync('nginx', ['-v']).status === 0) {
      const alone = await startBenchNginx(upstream.url, undefined);
      stops.push(alone.stop);
      nginxAlone = await load(alone.url, { cookie: gateway.cookie! });
      process.stdout.write(`${line('nginx alone -> upstream', nginxAlone)}\n`);
      const gated = await startBenchNginx(upstream.url, gateway.url);
      stops.push(gated.stop);
      nginxGate = await load(gated.url, { cookie: gateway.cookie! }, '/app');
      process.stdout.write(`${line('(e) nginx + auth_request /_gate/auth', nginxGate)}\n`);
    } else {
      process.stdout.write('(e) skipped: nginx is not installed (Debian: nginx-light)\n');
    }

    process.stdout.write('ratios (req/s; proxy-process CPU per request in brackets where both are known):\n');
    if (bare) {
      process.stdout.write(
        `  (c)/(b) = ${(session.rps / bare.rps).toFixed(2)} [${(session.cpuUs! / bare.cpuUs!).toFixed(2)}] (target >= 0.9)\n`,
      );
      process.stdout.write(
        `  (d)/(b) = ${(dpop.rps / bare.rps).toFixed(2)} [${(dpop.cpuUs! / bare.cpuUs!).toFixed(2)}]\n`,
      );
    }
    process.stdout.write(
      `  (d)/bound = ${(dpop.rps / verifyBound.rps).toFixed(2)} [CPU per request ${(dpop.cpuUs! / verifyBound.cpuUs!).toFixed(2)}x the bound's]\n`,
    );
    const verdict = (ratio: number, target: number) => `(target >= ${target}: ${ratio >= target ? 'met' : 'not met'})`;
    // Per CPU-second of the process under test: what a ratio of req/s means on a free core, and
    // what still means something when other processes take the cores.
    const perCpu = (ours: Result, baseline: Result) => baseline.cpuUs! / ours.cpuUs!;
    // The two targets, measured again in ROUNDS rounds in which each case and its baseline run
    // back to back, in alternating order: one pass gave ratios from 0.65 to 1.30 for the same
    // code on the same machine, as the other processes on the two cores took turns.
    const rounds: Array<{ cookie: number; dpop: number; cookieVsBefore?: number; dpopVsBefore?: number }> = [];
    const beforeHeaders = before && { cookie: before.cookie!, accept: 'text/html' };
    const beforeProofs = before && (await proofMaker(before.dpopJwk!, `${before.publicUrl}${path}`, before.token!));
    if (before && beforeHeaders && beforeProofs) {
      // Untimed, as this checkout's gateway was by the cases above: the JIT settles first.
      await measured(before, beforeHeaders);
      await beforeProofs.fill(budget);
      await measured(before, () => beforeProofs.next(), path);
    }
    for (let round = 1; round <= ROUNDS; round++) {
      const pair = async <T>(first: () => Promise<T>, second: () => Promise<T>) =>
        round % 2 === 1 ? [await first(), await second()] : [await second(), await first()].reverse();
      const [base, ours] = await pair(
        () => measured(undici, browserHeaders),
        () => measured(gateway, browserHeaders),
      );
      const [bound2, bound2Dpop] = await pair(
        async () => (await proofs.fill(budget), measured(rawBound, () => proofs.next(), path)),
        async () => (await proofs.fill(budget), measured(gateway, () => proofs.next(), path)),
      );
      const result: (typeof rounds)[number] = { cookie: perCpu(ours!, base!), dpop: perCpu(bound2Dpop!, bound2!) };
      if (before && beforeHeaders && beforeProofs) {
        const [then, now] = await pair(
          () => measured(before, beforeHeaders),
          () => measured(gateway, browserHeaders),
        );
        const [thenDpop, nowDpop] = await pair(
          async () => (await beforeProofs.fill(budget), measured(before, () => beforeProofs.next(), path)),
          async () => (await proofs.fill(budget), measured(gateway, () => proofs.next(), path)),
        );
        result.cookieVsBefore = perCpu(now!, then!);
        result.dpopVsBefore = perCpu(nowDpop!, thenDpop!);
        process.stdout.write(
          `  round ${round} against the baseline checkout: (c) ${Math.round(now!.cpuUs!)} vs ${Math.round(then!.cpuUs!)} µs/req, (d) ${Math.round(nowDpop!.cpuUs!)} vs ${Math.round(thenDpop!.cpuUs!)} µs/req${now!.errors + then!.errors + nowDpop!.errors + thenDpop!.errors ? '  errors' : ''}\n`,
        );
      }
      rounds.push(result);
      process.stdout.write(
        `  round ${round}: (c)/(b2c) per CPU-second ${result.cookie.toFixed(2)} (${Math.round(ours!.cpuUs!)} vs ${Math.round(base!.cpuUs!)} µs/req); (d)/bound2 ${result.dpop.toFixed(2)} (${Math.round(bound2Dpop!.cpuUs!)} vs ${Math.round(bound2!.cpuUs!)} µs/req)${bound2Dpop!.errors + bound2!.errors ? `  errors ${bound2Dpop!.errors + bound2!.errors}` : ''}\n`,
      );
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const cookieMedian = median(rounds.map((r) => r.cookie));
    const dpopMedian = median(rounds.map((r) => r.dpop));
    process.stdout.write(
      `  (c)/(b2c) per CPU-second, median of ${ROUNDS} rounds: ${cookieMedian.toFixed(2)} ${verdict(cookieMedian, 0.9)}\n`,
    );
    process.stdout.write(
      `  (d)/bound2 per CPU-second, median of ${ROUNDS} rounds: ${dpopMedian.toFixed(2)} ${verdict(dpopMedian, 0.8)}\n`,
    );
    if (before) {
      const cookieVsBefore = median(rounds.map((r) => r.cookieVsBefore!));
      const dpopVsBefore = median(rounds.map((r) => r.dpopVsBefore!));
      process.stdout.write(
        `  this checkout ÷ the baseline (${BASELINE}) per CPU-second, median of ${ROUNDS} rounds: (c) ${cookieVsBefore.toFixed(2)}, (d) ${dpopVsBefore.toFixed(2)} (above 1: faster now)\n`,
      );
    }
    if (nginxAlone && nginxGate)
      process.stdout.write(`  (e)/nginx alone = ${(nginxGate.rps / nginxAlone.rps).toFixed(2)}\n`);
    process.stdout.write(`# after: ${loadLine()}\n`);
  } finally {
    for (const stop of stops) await stop();
    for (const child of [upstream.child, proxy.child, gateway.child, bound.child, undici.child, rawBound.child])
      child.disconnect();
    before?.child.disconnect();
  }
}

if (role) await serve();
else await main();
