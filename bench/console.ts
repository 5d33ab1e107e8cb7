/**
 * bench:console — the server time of the operator console's list pages on SQLite with 100,000
 * accounts, 10,000 clients, 1,000 orgs and 100,000 receipts (docs/console.md#how-fast).
 *
 * Method: a control plane in a fresh data directory (bench/harness.ts), seeded in bulk straight
 * through its storage interface, in one transaction per kind (no HTTP, no ceremonies): accounts
 * `user000000…`, clients `cl_bench_…`, orgs `org-…` and one `account.created` receipt per account,
 * sealed into epochs before anything is timed, so that the sealer does not run beside the pages.
 * Then each page is requested through fastify's `inject` (no sockets: the time is the server's
 * work, from routing to the serialised HTML) with an operator's console session, one request at a
 * time, SAMPLES times after a warm-up; each answer must be 200 and hold the rows asked for, so a
 * failing page cannot look fast. Printed per page: the median and the 95th percentile of the
 * request's time, and the median of this process's CPU time per request (on a machine shared with
 * other work the time waits for a core; the CPU time does not).
 *
 * `npx tsx bench/console.ts [--accounts N] [--clients N]`; BENCH_SAMPLES (default 200) per page.
 */
import { createHash } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';
import { canonicalJson } from '#lib/ledger/canonical-json.js';
import type { StoredClient } from '../control-plane/src/storage/interface.js';
import { benchControlPlane, benchTap, log } from './harness.js';

const { values: args } = parseArgs({
  options: { accounts: { type: 'string' }, clients: { type: 'string' } },
});
const ACCOUNTS = Number(args.accounts ?? 100_000);
const CLIENTS = Number(args.clients ?? 10_000);
const ORGS = 1_000;
const SAMPLES = Number(process.env['BENCH_SAMPLES'] ?? 200);
const TARGET_MS = 100;

const pad = (n: number) => String(n).padStart(6, '0');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const { tap, runTeardowns } = benchTap();
log(
  `bench:console — Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, load ${loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')}, in-process (light-my-request), one request at a time`,
);
try {
  // A long seal interval: the seeded receipts are sealed once below, on purpose, not while pages are timed.
  const built = await benchControlPlane(tap, { 'ledger.sealIntervalMs': 60_000 });
  const { app, services, signIn } = built;
  const { storage } = services;
  const { browser: operator } = await signIn({ username: 'operator', console: 'operator' });
  const cookie = operator.header();

  const seeded = (what: string, started: bigint) =>
    log(`  seeded ${what} in ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s`);
  let started = process.hrtime.bigint();
  const at = Date.now() - 86_400_000;
  await storage.transaction(async (tx) => {
    for (let i = 0; i < ACCOUNTS; i++)
      await tx.identities.create({
        identityId: `usr_bench_${pad(i)}`,
        username: `user${pad(i)}`,
        displayName: '',
        preferences: {},
        founder: false,
        createdAt: at + i,
        updatedAt: at + i,
      });
  });
  seeded(`${ACCOUNTS} accounts`, started);

  started = process.hrtime.bigint();
  const metadata = validateClientMetadata({ redirect_uris: ['https://rp.example/cb'], client_name: 'Bench app' });
  await storage.transaction(async (tx) => {
    for (let i = 0; i < CLIENTS; i++) {
      const client: StoredClient = {
        clientId: `cl_bench_${pad(i)}`,
        type: 'confidential',
        metadata,
        secretHash: sha256(`secret-${i}`),
        secretIssuedAt: at,
        ownerId: i % 2 ? null : `usr_bench_${pad(i)}`,
        registrationTokenHash: sha256(`registration-${i}`),
        revision: 1,
        createdAt: at + i,
        updatedAt: at + i,
      };
      await tx.clients.insert(client);
    }
  });
  seeded(`${CLIENTS} clients`, started);

  started = process.hrtime.bigint();
  await storage.transaction(async (tx) => {
    for (let i = 0; i < ORGS; i++)
      await tx.orgs.create(
        { orgId: `org_bench_${pad(i)}`, slug: `org-${pad(i)}`, name: `Org ${i}`, website: null, createdAt: at + i },
        `usr_bench_${pad(i)}`,
      );
  });
  seeded(`${ORGS} orgs`, started);

  started = process.hrtime.bigint();
  await storage.transaction(async (tx) => {
    for (let i = 0; i < ACCOUNTS; i++) {
      const receipt = {
        kind: 'account.created',
        at: at + i,
        outcome: 'success',
        actor: { type: 'system' },
        identityId: `usr_bench_${pad(i)}`,
      };
      const body = canonicalJson(receipt);
      await tx.receipts.append(receipt, sha256(body), at + i, body);
    }
  });
  seeded(`${ACCOUNTS} receipts`, started);

  started = process.hrtime.bigint();
  while ((await storage.receipts.pendingCount()) > 0) await services.ledger.sealNow();
  seeded('(sealed the receipts into epochs)', started);

  const pages: Array<[string, string, RegExp]> = [
    ['accounts, first page', '/console/accounts', /user000040/],
    [
      'accounts, a later page',
      `/console/accounts?after=user${pad(ACCOUNTS / 2)}`,
      new RegExp(`user${pad(ACCOUNTS / 2 + 50)}`),
    ],
    [
      'accounts, search by username prefix',
      `/console/accounts?q=user${pad(ACCOUNTS / 2).slice(0, 3)}`,
      new RegExp(`user${pad(ACCOUNTS / 2 + 49)}`),
    ],
    ['accounts, search by identity id', `/console/accounts?q=usr_bench_${pad(ACCOUNTS - 1)}`, /usr_bench_/],
    ['clients, first page', '/console/clients', /cl_bench_000049/],
    [
      'clients, a later page',
      `/console/clients?after=cl_bench_${pad(CLIENTS / 2)}`,
      new RegExp(`cl_bench_${pad(CLIENTS / 2 + 50)}`),
    ],
    ['orgs, first page', '/console/orgs', /org-000049/],
    ['orgs, a later page', `/console/orgs?after=org-${pad(ORGS / 2)}`, new RegExp(`org-${pad(ORGS / 2 + 50)}`)],
    ['receipts, first page', '/console/receipts', /account\.created/],
    ['receipts, a later page', `/console/receipts?after=${ACCOUNTS / 2}`, /account\.created/],
    ['receipts, by type', '/console/receipts?type=account.created', /account\.created/],
    ['receipts, by any id', `/console/receipts?subject=usr_bench_${pad(ACCOUNTS - 10)}`, /account\.created/],
  ];

  const results: Array<{ name: string; median: number; p95: number; cpuMedian: number }> = [];
  for (const [name, url, expect] of pages) {
    const once = async () => {
      const cpuStart = process.cpuUsage();
      const start = process.hrtime.bigint();
      const res = await app.inject({ method: 'GET', url, headers: { cookie, accept: 'text/html' } });
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      const used = process.cpuUsage(cpuStart);
      if (res.statusCode !== 200 || !expect.test(res.body))
        throw new Error(
          `${url}: ${res.statusCode}, the rows asked for are missing:\n${res.body.slice(res.body.indexOf('<main'), res.body.indexOf('<main') + 2000)}`,
        );
      return { ms, cpuMs: (used.user + used.system) / 1000 };
    };
    for (let i = 0; i < 10; i++) await once(); // warm-up: the JIT and SQLite's page cache settle
    const samples: Array<{ ms: number; cpuMs: number }> = [];
    for (let i = 0; i < SAMPLES; i++) samples.push(await once());
    const times = samples.map((x) => x.ms).sort((a, b) => a - b);
    const cpu = samples.map((x) => x.cpuMs).sort((a, b) => a - b);
    const result = {
      name: `${name} (\`${url}\`)`,
      median: times[Math.floor(times.length / 2)]!,
      p95: times[Math.ceil(times.length * 0.95) - 1]!,
      cpuMedian: cpu[Math.floor(cpu.length / 2)]!,
    };
    log(
      `  ${result.name}: median ${result.median.toFixed(1)} ms, p95 ${result.p95.toFixed(1)} ms, CPU median ${result.cpuMedian.toFixed(1)} ms`,
    );
    results.push(result);
  }

  process.stdout.write(
    `\n${ACCOUNTS} accounts, ${CLIENTS} clients, ${ORGS} orgs, ${ACCOUNTS} receipts on SQLite; ${SAMPLES} requests per page\n\n| page | median (ms) | p95 (ms) | CPU median (ms) |\n|---|---|---|---|\n`,
  );
  for (const r of results)
    process.stdout.write(`| ${r.name} | ${r.median.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.cpuMedian.toFixed(1)} |\n`);
  const slow = results.filter((r) => r.p95 >= TARGET_MS);
  process.stdout.write(
    `\ntarget: every list page under ${TARGET_MS} ms: ${slow.length === 0 ? 'met' : `NOT met by ${slow.map((r) => r.name).join(', ')}`}\n`,
  );
} finally {
  await runTeardowns();
}
