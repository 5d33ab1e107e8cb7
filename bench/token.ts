/**
 * bench:token — refresh-token grants and code exchanges per second at the token endpoint,
 * Keyplane against node-oidc-provider (configured equivalently) in the same run, both judged
 * against the raw ES256 sign bound measured first (the bench:keys method).
 *
 * Method: both providers are driven in-process through light-my-request (fastify's `inject`
 * for Keyplane, the same library on oidc-provider's Node request handler), one request at a
 * time and then BENCH_IN_FLIGHT at a time (default 16, as concurrent clients), so the figures
 * are the server's work per grant on one core without sockets. Codes are minted outside the
 * timed section (Keyplane: through real authorize requests with a passkey session and a
 * remembered approval; oidc-provider: saved through its AuthorizationCode model), then exchanged
 * in timed batches. Refresh runs one rotating chain per request in flight. The two
 * providers run in alternating batches (bench/harness.ts `measureInterleaved`), so that both
 * see the same load.
 * Every response is checked (status 200 and the expected tokens), so a failing grant cannot
 * look fast.
 *
 * Each case reports grants per second of wall time and per CPU-second of this process
 * (bench/harness.ts): both providers run in this one process, so on a shared machine the CPU
 * figure is the one-core rate and the ratio between them, while the wall rate falls with the
 * load. The CPU figure includes the request-building side of light-my-request, the same for both.
 *
 * BENCH_BASELINE=<another checkout> adds that checkout's control plane (on SQLite) to every case,
 * built and driven by its own bench/harness.ts and test/helpers/oidc.ts, interleaved batch by batch
 * with this one in the same process: a before/after of the grant path in one run, which alternate
 * runs on a shared machine cannot give (docs/performance.md#tokens-npm-run-benchtoken). The checkout needs its own
 * node_modules.
 */
import { generateKeyPairSync, randomBytes, createHash } from 'node:crypto';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import inject from 'light-my-request';
import Provider from 'oidc-provider';
import * as oidcHelpers from '../test/helpers/oidc.js';
import { ADMIN, RESOURCE, REDIRECT, basicAuth } from '../test/helpers/oidc.js';
import * as harness from './harness.js';
import { benchCase, describeRun, es256Bound, log, measureInterleaved, type Rate } from './harness.js';

type Teardowns = ReturnType<typeof harness.benchTap>['tap'];

/** What builds and drives a control plane: this checkout's, or the baseline's (BENCH_BASELINE). */
interface KeyplaneParts {
  harness: Pick<typeof harness, 'benchControlPlane'>;
  oidc: Pick<
    typeof oidcHelpers,
    'registerClient' | 'pkcePair' | 'obtainCode' | 'goodRequest' | 'exchangeCode' | 'refresh'
  >;
}

const BASELINE = process.env['BENCH_BASELINE'];
const current: KeyplaneParts = { harness, oidc: oidcHelpers };
const baseline: KeyplaneParts | null = BASELINE
  ? {
      harness: (await import(join(resolve(BASELINE), 'bench/harness.ts'))) as KeyplaneParts['harness'],
      oidc: (await import(join(resolve(BASELINE), 'test/helpers/oidc.ts'))) as KeyplaneParts['oidc'],
    }
  : null;

/** Logs the JOSE header of the first access token each provider issues (both must be ES256 at+jwt). */
const shown = new Set<string>();
function showAccessTokenHeader(what: string, token: string): void {
  const key = what.split(' ')[0]!;
  if (shown.has(key)) return;
  shown.add(key);
  const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as Record<string, unknown>;
  log(`  ${key} access token header: alg=${String(header['alg'])} typ=${String(header['typ'])}`);
}

function expectTokens(status: number, body: string, what: string): Record<string, string> {
  if (status !== 200) throw new Error(`${what} failed: ${status} ${body.slice(0, 300)}`);
  const json = JSON.parse(body) as Record<string, string>;
  if (!json['access_token'] || !json['refresh_token'] || !json['id_token'])
    throw new Error(`${what}: missing tokens: ${body.slice(0, 300)}`);
  showAccessTokenHeader(what, json['access_token']);
  return json;
}

// ---- Keyplane ----

interface Rates {
  exchange: Rate;
  refresh: Rate;
  /** PostgreSQL statements sent per grant (counted at the driver), when measured there. */
  statements?: { exchange: number; refresh: number } | undefined;
}

/** What the run drives on each provider: minting codes (untimed), exchanging them, refreshing. */
interface Contender {
  name: string;
  mint(n: number): Promise<Array<{ code: string; verifier: string }>>;
  exchangeOnce(input: { code: string; verifier: string }): Promise<Record<string, string>>;
  refreshOnce(token: string): Promise<string>;
  /** Statements per grant on PostgreSQL, counted after the timed runs. */
  statements?(): Promise<{ exchange: number; refresh: number }>;
}

/**
 * The exchange and refresh cases of each provider; a refresh case runs `inFlight` rotating
 * chains, begun when it is first timed (oidc-provider's in-memory adapter is an LRU cache: the
 * codes of the exchange runs would push out a token made earlier). Each call takes a chain's
 * current token and puts back its successor, so no token is refreshed twice.
 */
function casesOf(provider: Contender, inFlight: number) {
  const chains: string[] = [];
  const startChains = async (n: number) => {
    while (chains.length < inFlight)
      chains.push((await provider.exchangeOnce((await provider.mint(1))[0]!))['refresh_token']!);
    return new Array<null>(n).fill(null);
  };
  return {
    exchange: benchCase({
      name: `${provider.name} code exchange`,
      prepare: provider.mint,
      op: async (input) => void (await provider.exchangeOnce(input)),
    }),
    refresh: benchCase({
      name: `${provider.name} refresh (rotating)`,
      prepare: startChains,
      op: async () => void chains.push(await provider.refreshOnce(chains.pop()!)),
    }),
  };
}

/** Counts the statements the pg driver sends (BEGIN and COMMIT included) while `on()` is true. */
let pgStatements = 0;
let countingPg = false;
const pgQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  if (countingPg) pgStatements++;
  return (pgQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof pgQuery;

async function keyplane(tap: Teardowns, databaseUrl?: string, parts = current): Promise<Contender> {
  const backend = `${databaseUrl ? 'PostgreSQL' : 'SQLite'}${parts === current ? '' : ', baseline'}`;
  const { registerClient, pkcePair, obtainCode, goodRequest, exchangeCode, refresh } = parts.oidc;
  const { app, browser } = await parts.harness.benchControlPlane(tap, {
    adminToken: ADMIN,
    ...(databaseUrl ? { databaseUrl } : {}),
  });
  const client = await registerClient(app);
  const mint = async (n: number) => {
    const out: Array<{ code: string; verifier: string }> = [];
    for (let i = 0; i < n; i++) {
      const { verifier, challenge } = pkcePair();
      const { code } = await obtainCode(browser, goodRequest(client, challenge, { resource: RESOURCE }));
      out.push({ code, verifier });
    }
    return out;
  };
  const exchangeOnce = async ({ code, verifier }: { code: string; verifier: string }) => {
    const res = await exchangeCode(app, client, code, verifier, {}, { resource: RESOURCE });
    return expectTokens(res.statusCode, res.body, 'Keyplane exchange');
  };
  const refreshOnce = async (token: string) => {
    const res = await refresh(app, client, token);
    return expectTokens(res.statusCode, res.body, 'Keyplane refresh')['refresh_token']!;
  };
  const statements = async () => {
    // Counted at the driver on one grant of each kind (the sealer is idle between its 1 s
    // ticks, and a tick that lands inside is visible as a jump).
    const [code] = await mint(1);
    await app.kp.ledger.sealNow();
    pgStatements = 0;
    countingPg = true;
    const token = (await exchangeOnce(code!))['refresh_token']!;
    const exchange = pgStatements;
    pgStatements = 0;
    await refreshOnce(token);
    const refreshed = pgStatements;
    countingPg = false;
    log(`  PostgreSQL statements per grant: code exchange ${exchange}, refresh ${refreshed}`);
    return { exchange, refresh: refreshed };
  };
  return { name: `Keyplane (${backend})`, mint, exchangeOnce, refreshOnce, ...(databaseUrl ? { statements } : {}) };
}

// ---- node-oidc-provider, configured equivalently ----

async function nodeOidcProvider(): Promise<Contender> {
  const issuer = 'http://localhost:4401';
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'bench', alg: 'ES256', use: 'sig' };
  const client = { client_id: 'notes', client_secret: randomBytes(32).toString('base64url') };
  const provider = new Provider(issuer, {
    clients: [
      {
        ...client,
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        id_token_signed_response_alg: 'ES256',
      },
    ],
    jwks: { keys: [jwk] },
    enabledJWA: { idTokenSigningAlgValues: ['ES256'] },
    scopes: ['openid', 'email', 'profile', 'offline_access'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    findAccount: async (_ctx: unknown, sub: string) => ({
      accountId: sub,
      claims: async () => ({ sub, email: 'bench@example.com', email_verified: true, name: 'Bench' }),
    }),
    // Equivalent to Keyplane: PKCE for every client, rotation on every refresh, JWT access
    // tokens (RFC 9068) for the resource, ES256 everywhere.
    pkce: { required: () => true },
    rotateRefreshToken: true,
    features: {
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'openid',
          audience: RESOURCE,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 600,
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, RefreshToken: 30 * 86_400, Grant: 30 * 86_400 },
  });
  const handler = provider.callback();
  const grant = new provider.Grant({ accountId: 'usr_bench', clientId: client.client_id });
  grant.addOIDCScope('openid email profile offline_access');
  grant.addResourceScope(RESOURCE, 'openid');
  const grantId = await grant.save();
  const authTime = Math.floor(Date.now() / 1000);
  const mint = async (n: number) => {
    const out: Array<{ code: string; verifier: string }> = [];
    for (let i = 0; i < n; i++) {
      const verifier = randomBytes(32).toString('base64url');
      const code = new provider.AuthorizationCode({
        accountId: 'usr_bench',
        clientId: client.client_id,
        grantId,
        redirectUri: REDIRECT,
        scope: 'openid email profile offline_access',
        codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
        codeChallengeMethod: 'S256',
        nonce: 'n-456',
        authTime,
        acr: 'passkey',
        amr: ['pop', 'user'],
        resource: RESOURCE,
        sessionUid: 'bench-session',
      });
      out.push({ code: await code.save(), verifier });
    }
    return out;
  };
  const post = async (form: Record<string, string>) =>
    inject(handler as never, {
      method: 'POST',
      url: '/token',
      remoteAddress: '127.0.0.1',
      headers: {
        host: 'localhost:4401',
        authorization: basicAuth(client),
        'content-type': 'application/x-www-form-urlencoded',
      },
      payload: new URLSearchParams(form).toString(),
    });
  const exchangeOnce = async ({ code, verifier }: { code: string; verifier: string }) => {
    const res = await post({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      resource: RESOURCE,
    });
    return expectTokens(res.statusCode, res.body, 'oidc-provider exchange');
  };
  const refreshOnce = async (token: string) => {
    const res = await post({ grant_type: 'refresh_token', refresh_token: token, resource: RESOURCE });
    return expectTokens(res.statusCode, res.body, 'oidc-provider refresh')['refresh_token']!;
  };
  return { name: 'oidc-provider', mint, exchangeOnce, refreshOnce };
}

/**
 * Keyplane and oidc-provider interleaved, batch by batch (`measureInterleaved`), so they share
 * the load; `inFlight` requests at a time. Every case gets providers of its own, fresh from
 * `contenders()`: oidc-provider's development adapter keeps every code and token on the heap, and
 * after some thousand grants collection made it two to three times slower per grant (measured:
 * 654 exchanges per CPU-second fresh, 259 after one round of each case), which a shared instance
 * would have counted against it.
 */
async function sideBySide(contenders: (tap: Teardowns) => Promise<Contender[]>, inFlight: number): Promise<Rates[]> {
  log(`  ${inFlight} request${inFlight === 1 ? '' : 's'} in flight:`);
  const options = { batch: Math.max(50, inFlight * 8), inFlight };
  // Each case's providers are torn down after it: a control plane left running keeps its timers
  // (the sealer ticks every second), whose work would be counted in the next case.
  const forExchange = harness.benchTap();
  const exchange = await measureInterleaved(
    (await contenders(forExchange.tap)).map((provider) => casesOf(provider, inFlight).exchange),
    options,
  );
  await forExchange.runTeardowns();
  const forRefresh = harness.benchTap();
  const refreshing = await contenders(forRefresh.tap);
  const refresh = await measureInterleaved(
    refreshing.map((provider) => casesOf(provider, inFlight).refresh),
    options,
  );
  const out: Rates[] = [];
  for (const [i, provider] of refreshing.entries())
    out.push({ exchange: exchange[i]!, refresh: refresh[i]!, statements: await provider.statements?.() });
  await forRefresh.runTeardowns();
  return out;
}

/**
 * Requests in flight at once in the second round (the first has one): a server at thousands of
 * grants a second has many, and with them transactions share a commit (SQLite group commit).
 */
const IN_FLIGHT = Math.max(2, Number(process.env['BENCH_IN_FLIGHT'] ?? 16));

const TARGETS = { exchange: 2000, refresh: 3000, ratio: 1.5 };

describeRun('bench:token');
const bound = await es256Bound();
let withReference = true;
try {
  await nodeOidcProvider();
} catch (error) {
  withReference = false;
  log(`  oidc-provider could not be set up: ${(error as Error).message}`);
}
const postgresRun = process.env['BENCH_SKIP_POSTGRES'] !== '1';
const rounds: Array<{ inFlight: number; kp: Rates; other: Rates | null; base: Rates | null; onPg: Rates | null }> = [];
for (const inFlight of [1, IN_FLIGHT]) {
  const [kp, ...rest] = await sideBySide(
    async (tap) => [
      await keyplane(tap),
      ...(withReference ? [await nodeOidcProvider()] : []),
      ...(baseline ? [await keyplane(tap, undefined, baseline)] : []),
    ],
    inFlight,
  );
  const other = withReference ? rest.shift()! : null;
  const base = baseline ? rest.shift()! : null;
  const [onPg = null] = postgresRun
    ? await sideBySide(async (tap) => {
        const databaseUrl = await harness.postgresDatabase(tap, 'kp_bench');
        return databaseUrl ? [await keyplane(tap, databaseUrl)] : [];
      }, inFlight)
    : [];
  rounds.push({ inFlight, kp: kp!, other, base, onPg });
}
const verdict = (ok: boolean) => (ok ? 'met' : 'not met');
const round = (rate: Rate) => `${Math.round(rate.cpu)} / ${Math.round(rate.wall)}`;
// A code exchange signs two JWTs (ID token, access token); a refresh signs two as well. Each
// cell is "per CPU-second / per wall second"; the targets are judged on the CPU figure (one
// core's worth of this process), which holds up when the machine is shared.
process.stdout.write(
  `\nLoad average at the end: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ')} (1 / 5 / 15 min). Cells: per CPU-second / per wall second.\n`,
);
const baseColumns = baseline ? [`baseline SQLite (${BASELINE})`, 'this ÷ baseline per CPU-s (wall)'] : [];
const header = [
  'grant',
  'in flight',
  'Keyplane SQLite',
  'target (per CPU-s)',
  'node-oidc-provider',
  'ratio per CPU-s (wall) (target ≥ 1.5)',
  ...baseColumns,
  'Keyplane PostgreSQL',
  'PostgreSQL statements per grant',
  'ES256 bound ÷ 2',
  'SQLite share of bound (CPU)',
];
process.stdout.write(`\n| ${header.join(' | ')} |\n|${header.map(() => '---|').join('')}\n`);
const ratioOf = (a: Rate, b: Rate | undefined) =>
  b === undefined ? 'n/a' : `${(a.cpu / b.cpu).toFixed(2)} (${(a.wall / b.wall).toFixed(2)})`;
for (const { inFlight, kp, other, base, onPg } of rounds) {
  for (const name of ['exchange', 'refresh'] as const) {
    const k = kp[name];
    const o = other?.[name];
    const target = TARGETS[name];
    const cells = [
      name === 'exchange' ? 'code exchange' : 'refresh (rotating)',
      String(inFlight),
      round(k),
      `≥ ${target}: ${verdict(k.cpu >= target)}`,
      o === undefined ? 'n/a' : round(o),
      o === undefined ? 'n/a' : `${ratioOf(k, o)}: ${verdict(k.cpu / o.cpu >= TARGETS.ratio)}`,
      ...(base ? [round(base[name]), ratioOf(k, base[name])] : []),
      onPg ? round(onPg[name]) : 'skipped',
      onPg?.statements ? String(onPg.statements[name]) : 'n/a',
      `${Math.round(bound.cpu / 2)} / ${Math.round(bound.wall / 2)}`,
      `${((k.cpu / (bound.cpu / 2)) * 100).toFixed(1)} %`,
    ];
    process.stdout.write(`| ${cells.join(' | ')} |\n`);
  }
}
