/**
 * bench:growth — what the hot paths cost as the data grows (docs/performance.md#growth-npm-run-benchgrowth).
 *
 * Two uses:
 *
 * `npm run bench:growth -- --accounts N --receipts N --data DIR` seeds the data directory DIR in
 * bulk (bench/growth-seed.ts: accounts with a passkey each, clients, receipts sealed by the ledger
 * itself; 10 receipts per account when `--receipts` is left out, one client per 10 accounts when
 * `--clients` is) and exits: the control plane then starts on DIR as on any other
 * (`keyplane control-plane --data DIR`), and `keyplane ledger audit --data DIR` passes. The store is
 * the one the server would open there: SQLite in DIR, or PostgreSQL when `KEYPLANE_DATABASE_URL`
 * (or the config file's `databaseUrl`) says so; the master key is the server's too
 * (`KEYPLANE_MASTER_KEY`, else the dev key file in DIR).
 *
 * `npm run bench:growth -- --accounts N --receipts N` (no `--data`) measures: two control planes
 * in-process, one on a small store (`--small-accounts`, default 1,000 accounts and 10 receipts
 * each) and one on a store of the size asked for, both seeded the same way, then one request at a
 * time through fastify's `inject`, the two stores interleaved request by request (the order
 * swapped every request, so load from elsewhere falls on both alike): a passkey sign-in
 * (assertion options + verification, a software authenticator's real ES256 assertion), a code
 * exchange (codes minted beforehand, untimed), a refresh grant (one rotating chain), an
 * introspection of an access token, a receipt's inclusion proof (`GET /receipts/{hash}`, a seeded
 * receipt anywhere in the ledger) and an absence proof (`GET /receipts/{hash}/absence?epoch=…`, a
 * random hash against a random sealed epoch). BENCH_ROUNDS rounds (default 5, after an untimed
 * warm-up) of BENCH_SAMPLES requests per operation and store (default 40); per operation the
 * ratio is the median over the rounds of large p50 ÷ small p50. Every answer is checked, so a
 * failing request cannot look fast. Also printed: the proof sizes (hashes in the audit path) on
 * both stores, which grow as log2 of the epoch's size, not of the ledger's. `--postgres` puts both
 * stores in throwaway PostgreSQL databases (KEYPLANE_BENCH_POSTGRES_URL, bench/harness.ts).
 */
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { loadControlPlaneConfig } from '#config/load.js';
import { openControlPlaneServices } from '../control-plane/src/services.js';
import {
  ADMIN,
  RESOURCE,
  basicAuth,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  refresh,
  registerClient,
} from '../test/helpers/oidc.js';
import { ORIGIN } from '../test/helpers/signed-in.js';
import { SoftAuthenticator } from '../test/helpers/soft-authenticator.js';
import { benchControlPlane, benchTap, log, postgresDatabase } from './harness.js';
import { seedGrowth, type GrowthSize } from './growth-seed.js';

const { values: args } = parseArgs({
  options: {
    accounts: { type: 'string' },
    receipts: { type: 'string' },
    clients: { type: 'string' },
    data: { type: 'string' },
    'small-accounts': { type: 'string' },
    postgres: { type: 'boolean' },
  },
});

function count(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) {
    process.stderr.write(`--${name} must be a whole number, not ${value}\n`);
    process.exit(2);
  }
  return n;
}

/** The sizes asked for: 10 receipts per account and one client per 10 accounts unless given. */
function sizeOf(accounts: number, receipts?: string, clients?: string): GrowthSize {
  return {
    accounts,
    receipts: count('receipts', receipts, accounts * 10),
    clients: count('clients', clients, Math.floor(accounts / 10)),
  };
}

const size = sizeOf(count('accounts', args.accounts, 100_000), args.receipts, args.clients);
const describe = (s: GrowthSize) => `${s.accounts} accounts, ${s.clients} clients, ${s.receipts} receipts`;

// ---- measure: a small store against a large one, in one run ----

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const SAMPLES = Number(process.env['BENCH_SAMPLES'] ?? 40);
const PROOF_SAMPLES = 20;

type Teardowns = ReturnType<typeof benchTap>['tap'];
interface Op {
  /** Untimed preparation of one request's input. */
  prepare?: () => Promise<unknown>;
  run: (input: unknown) => Promise<void>;
}
interface Store {
  name: string;
  ops: Record<string, Op>;
  proofSize: { inclusion: number; absence: number; epochs: number; epochSize: number };
}

function expect200(res: { statusCode: number; body: string }, what: string): Record<string, unknown> {
  if (res.statusCode !== 200) throw new Error(`${what}: ${res.statusCode} ${res.body.slice(0, 300)}`);
  return JSON.parse(res.body) as Record<string, unknown>;
}

async function contender(tap: Teardowns, name: string, seed: GrowthSize): Promise<Store> {
  const databaseUrl = args.postgres ? await postgresDatabase(tap, 'kp_bench_growth') : undefined;
  if (args.postgres && !databaseUrl) throw new Error('--postgres: no PostgreSQL server answers');
  const { app, services, browser } = await benchControlPlane(tap, {
    adminToken: ADMIN,
    ...(databaseUrl ? { databaseUrl } : {}),
  });
  log(`${name} store: seeding ${describe(seed)}${databaseUrl ? ' (PostgreSQL)' : ' (SQLite)'}`);
  const seeded = await seedGrowth(services, seed, () => undefined);
  log(`  seeded in ${seeded.seconds.total.toFixed(1)} s`);

  // The measured account: a passkey of a software authenticator, a client, a rotating refresh chain.
  const soft = new SoftAuthenticator(ORIGIN);
  const { options: addOptions } = expect200(await browser.post('/auth/passkeys/add-options'), 'add-options');
  expect200(await browser.post('/auth/passkeys/add-verify', { response: soft.create(addOptions) }), 'add-verify');
  const client = await registerClient(app);
  const mint = async () => {
    const { verifier, challenge } = pkcePair();
    const { code } = await obtainCode(browser, goodRequest(client, challenge, { resource: RESOURCE }));
    return { code, verifier };
  };
  const exchange = async ({ code, verifier }: { code: string; verifier: string }) => {
    const tokens = expect200(
      await exchangeCode(app, client, code, verifier, {}, { resource: RESOURCE }),
      'code exchange',
    );
    if (!tokens['access_token'] || !tokens['refresh_token']) throw new Error('code exchange: tokens missing');
    return tokens as Record<string, string>;
  };
  const first = await exchange(await mint());
  let refreshToken = first['refresh_token']!;
  const accessToken = first['access_token']!;
  const latest = (await services.storage.receipts.latestCheckpoint())!;
  const hashes = seeded.receiptHashes;
  let inclusion = 0;
  let absence = 0;
  for (let i = 0; i < PROOF_SAMPLES; i++) {
    const found = expect200(
      await app.inject({ method: 'GET', url: `/receipts/${hashes[Math.floor((i * hashes.length) / PROOF_SAMPLES)]}` }),
      'receipt',
    )['proof'] as { path: string[] };
    inclusion = Math.max(inclusion, found.path.length);
    const absent = expect200(
      await app.inject({
        method: 'GET',
        url: `/receipts/${randomBytes(32).toString('hex')}/absence?epoch=${1 + (i % latest.epoch)}`,
      }),
      'absence',
    )['absence'] as { left: { path: string[] } | null; right: { path: string[] } | null };
    absence = Math.max(absence, absent.left?.path.length ?? 0, absent.right?.path.length ?? 0);
  }
  let next = 0;
  const ops: Record<string, Op> = {
    'passkey sign-in': {
      run: async () => {
        const { options } = expect200(await app.inject({ method: 'GET', url: '/auth/assertion-options' }), 'options');
        expect200(
          await app.inject({
            method: 'POST',
            url: '/auth/assertion-verify',
            headers: { origin: ORIGIN },
            payload: { response: soft.get(options, { counter: 0 }) } as Record<string, unknown>,
          }),
          'assertion-verify',
        );
      },
    },
    'code exchange': {
      prepare: mint,
      run: async (input) => void (await exchange(input as { code: string; verifier: string })),
    },
    refresh: {
      run: async () => {
        const tokens = expect200(await refresh(app, client, refreshToken), 'refresh');
        refreshToken = tokens['refresh_token'] as string;
      },
    },
    introspection: {
      run: async () => {
        const body = expect200(
          await app.inject({
            method: 'POST',
            url: '/auth/introspect',
            headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
            payload: new URLSearchParams({ token: accessToken }).toString(),
          }),
          'introspect',
        );
        if (body['active'] !== true) throw new Error('introspection: the access token is not active');
      },
    },
    'inclusion proof': {
      run: async () => {
        const body = expect200(
          await app.inject({ method: 'GET', url: `/receipts/${hashes[next++ % hashes.length]}` }),
          'receipt',
        );
        if (!body['proof']) throw new Error('receipt: no proof (not sealed)');
      },
    },
    'absence proof': {
      prepare: async () => ({
        hash: randomBytes(32).toString('hex'),
        epoch: 1 + Math.floor(Math.random() * latest.epoch),
      }),
      run: async (input) => {
        const { hash, epoch } = input as { hash: string; epoch: number };
        expect200(await app.inject({ method: 'GET', url: `/receipts/${hash}/absence?epoch=${epoch}` }), 'absence');
      },
    },
  };
  return {
    name,
    ops,
    proofSize: { inclusion, absence, epochs: latest.epoch, epochSize: services.config.ledger.sealMaxReceipts },
  };
}

const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A round's figures per store: operation → p50 of the request's time and of this process's CPU time (ms). */
type RoundFigures = Array<Record<string, { wall: number; cpu: number }>>;

/** One round: each operation SAMPLES times on each store, interleaved request by request. */
async function round(stores: [Store, Store]): Promise<RoundFigures> {
  const p50: RoundFigures = stores.map(() => ({}));
  for (const op of Object.keys(stores[0].ops)) {
    const inputs = await Promise.all(
      stores.map(async (s) => {
        const out: unknown[] = [];
        for (let i = 0; i < SAMPLES; i++) out.push(await s.ops[op]!.prepare?.());
        return out;
      }),
    );
    const wall: number[][] = stores.map(() => []);
    const cpu: number[][] = stores.map(() => []);
    for (let i = 0; i < SAMPLES; i++) {
      for (const k of i % 2 ? [1, 0] : [0, 1]) {
        const cpuStart = process.cpuUsage();
        const start = performance.now();
        await stores[k]!.ops[op]!.run(inputs[k]![i]);
        wall[k]!.push(performance.now() - start);
        const used = process.cpuUsage(cpuStart);
        cpu[k]!.push((used.user + used.system) / 1000);
      }
    }
    stores.forEach((_, k) => (p50[k]![op] = { wall: median(wall[k]!), cpu: median(cpu[k]!) }));
  }
  return p50;
}

async function measureGrowth(): Promise<void> {
  const small = sizeOf(count('small-accounts', args['small-accounts'], 1000));
  log(
    `bench:growth — ${describe(small)} against ${describe(size)}, ${args.postgres ? 'PostgreSQL' : 'SQLite'}, ` +
      `Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, load ${loadavg()
        .map((n) => n.toFixed(1))
        .join(' ')}, in-process (light-my-request), one request at a time, ${ROUNDS} rounds of ${SAMPLES}`,
  );
  const { tap, runTeardowns } = benchTap();
  try {
    const stores: [Store, Store] = [await contender(tap, 'small', small), await contender(tap, 'large', size)];
    await round(stores); // warm-up, untimed
    const rounds: RoundFigures[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const p50 = await round(stores);
      rounds.push(p50);
      log(
        `  round ${r + 1}: ${Object.keys(p50[0]!)
          .map((op) => `${op} ${p50[0]![op]!.wall.toFixed(2)}/${p50[1]![op]!.wall.toFixed(2)} ms`)
          .join(', ')} (small/large p50)`,
      );
    }
    const rows = Object.keys(stores[0].ops).map((op) => {
      const of = (k: number, what: 'wall' | 'cpu') => median(rounds.map((r) => r[k]![op]![what]));
      const ratio = (what: 'wall' | 'cpu') => median(rounds.map((r) => r[1]![op]![what] / r[0]![op]![what]));
      return {
        op,
        small: of(0, 'wall'),
        large: of(1, 'wall'),
        ratio: ratio('wall'),
        cpuSmall: of(0, 'cpu'),
        cpuLarge: of(1, 'cpu'),
        cpuRatio: ratio('cpu'),
      };
    });
    const [s, l] = stores;
    process.stdout.write(
      `\n${describe(small)} (small) against ${describe(size)} (large), ${args.postgres ? 'PostgreSQL' : 'SQLite'}; ` +
        `median of ${ROUNDS} rounds of ${SAMPLES} requests per operation and store (p50 per round)\n\n` +
        `| operation | small p50 (ms) | large p50 (ms) | large ÷ small | CPU small (ms) | CPU large (ms) | CPU large ÷ small |\n|---|---|---|---|---|---|---|\n` +
        rows
          .map(
            (r) =>
              `| ${r.op} | ${r.small.toFixed(2)} | ${r.large.toFixed(2)} | ${r.ratio.toFixed(2)} | ${r.cpuSmall.toFixed(2)} | ${r.cpuLarge.toFixed(2)} | ${r.cpuRatio.toFixed(2)} |\n`,
          )
          .join('') +
        `\nproof sizes (hashes in the audit path, the longest of ${PROOF_SAMPLES} receipts): inclusion ${s.proofSize.inclusion} small, ${l.proofSize.inclusion} large; ` +
        `absence ${s.proofSize.absence} small, ${l.proofSize.absence} large; epochs ${s.proofSize.epochs} and ${l.proofSize.epochs} ` +
        `of up to ${s.proofSize.epochSize} receipts (log2 ${Math.log2(s.proofSize.epochSize).toFixed(1)})\n`,
    );
    const worst = rows.reduce((a, b) => (b.ratio > a.ratio ? b : a));
    process.stdout.write(
      `target: every operation within 1.3× of the small store: ${worst.ratio <= 1.3 ? 'met' : `NOT met (worst ${worst.op} ${worst.ratio.toFixed(2)})`}\n`,
    );
  } finally {
    await runTeardowns();
  }
}

// ---- seed a data directory and exit, or measure ----
if (args.data !== undefined) {
  const started = performance.now();
  const base = loadControlPlaneConfig({ env: process.env, overrides: { dataDir: args.data } });
  const config = { ...base, issuer: base.issuer ?? 'http://localhost' };
  const services = await openControlPlaneServices(config, { background: false, warn: log, notify: log });
  try {
    log(`bench:growth — seeding ${describe(size)} into ${config.databaseUrl ? 'PostgreSQL' : args.data}`);
    const seeded = await seedGrowth(services, size, log);
    const { accounts, clients, receipts } = seeded.seconds;
    process.stdout.write(
      `seeded ${describe(size)} in ${((performance.now() - started) / 1000).toFixed(1)} s ` +
        `(accounts ${accounts.toFixed(1)} s, clients ${clients.toFixed(1)} s, receipts appended and sealed ${receipts.toFixed(1)} s` +
        `${receipts > 0 ? `, ${Math.round(size.receipts / receipts)} receipts/s` : ''})\n`,
    );
  } finally {
    await services.close();
  }
} else {
  await measureGrowth();
}
