/**
 * bench:passkeys — a passkey sign-in's server work: request options (`GET /auth/assertion-options`)
 * and verification (`POST /auth/assertion-verify`, which also opens the session), per CPU-second,
 * one request in flight and 16 in flight, on SQLite and on PostgreSQL.
 *
 * Method: the control plane runs in-process and is driven through fastify's `inject` (no sockets),
 * like bench:token (shared set-up in bench/harness.ts). The account's passkey is a software
 * authenticator (test/helpers/soft-authenticator.ts: real ES256 assertions, verified by
 * @simplewebauthn/server as a browser's would be). Options and verification are timed as two
 * cases interleaved batch by batch (bench/harness.ts `measureInterleaved`); the assertions a
 * verification batch checks are fetched and signed in the untimed preparation, so the client's
 * signature never counts as server time. The sign-in figure is the two combined (one options call
 * and one verification per sign-in). The authenticator answers with signature counter 0, as
 * synced passkeys do, so that 16 verifications in flight cannot arrive out of counter order.
 * Every answer is checked (status 200), so a failing sign-in cannot look fast.
 *
 * PostgreSQL: KEYPLANE_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres),
 * in a database made for the run and dropped after it; BENCH_SKIP_POSTGRES=1 leaves it out.
 * BENCH_SECONDS sets the timed work per case (default 5).
 */
import { SoftAuthenticator } from '../test/helpers/soft-authenticator.js';
import { ORIGIN, type Browser } from '../test/helpers/signed-in.js';
import {
  benchCase,
  benchControlPlane,
  benchTap,
  describeRun,
  log,
  measureInterleaved,
  postgresDatabase,
  type Rate,
} from './harness.js';

type Teardowns = ReturnType<typeof benchTap>['tap'];
const IN_FLIGHT = [1, 16];

function expectOk(res: { statusCode: number; body: string }, what: string) {
  if (res.statusCode !== 200) throw new Error(`${what}: ${res.statusCode} ${res.body.slice(0, 200)}`);
  return JSON.parse(res.body) as Record<string, unknown>;
}

/** A control plane whose `bench` account holds one passkey of a software authenticator. */
async function withPasskey(tap: Teardowns, databaseUrl?: string) {
  const { app, browser } = await benchControlPlane(tap, databaseUrl ? { databaseUrl } : {});
  const soft = new SoftAuthenticator(ORIGIN);
  const { options } = expectOk(await browser.post('/auth/passkeys/add-options'), 'add-options');
  expectOk(await browser.post('/auth/passkeys/add-verify', { response: soft.create(options) }), 'add-verify');
  const options1 = async () =>
    expectOk(await app.inject({ method: 'GET', url: '/auth/assertion-options' }), 'assertion-options')['options'];
  const verify = async (response: unknown) =>
    expectOk(
      await app.inject({
        method: 'POST',
        url: '/auth/assertion-verify',
        headers: { origin: ORIGIN },
        payload: { response } as Record<string, unknown>,
      }),
      'assertion-verify',
    );
  return { soft, options1, verify, browser: browser as Browser };
}

async function backend(tap: Teardowns, name: string, databaseUrl?: string) {
  const { soft, options1, verify } = await withPasskey(tap, databaseUrl);
  const figures: string[] = [];
  for (const inFlight of IN_FLIGHT) {
    log(`${name}, ${inFlight} in flight:`);
    const [options, verification] = (await measureInterleaved(
      [
        benchCase({
          name: 'options',
          prepare: async (n) => Array.from({ length: n }, () => null),
          op: async () => void (await options1()),
        }),
        benchCase({
          name: 'verification',
          prepare: async (n) => {
            const out = [];
            for (let i = 0; i < n; i++) out.push(soft.get(await options1(), { counter: 0 }));
            return out;
          },
          op: async (response) => void (await verify(response)),
        }),
      ],
      { inFlight },
    )) as [Rate, Rate];
    const signIn = 1 / (1 / options.cpu + 1 / verification.cpu);
    figures.push(`${name}, ${inFlight} in flight: ${Math.round(signIn)} passkey sign-ins per CPU-second`);
    log(`  sign-in (options + verification): ${Math.round(signIn)} per CPU-second`);
  }
  return figures;
}

const { tap, runTeardowns } = benchTap();
describeRun('bench:passkeys');
try {
  const figures = await backend(tap, 'SQLite');
  if (process.env['BENCH_SKIP_POSTGRES'] !== '1') {
    const databaseUrl = await postgresDatabase(tap, 'kp_bench_pk');
    if (databaseUrl) figures.push(...(await backend(tap, 'PostgreSQL', databaseUrl)));
  }
  for (const line of figures) process.stdout.write(`${line}\n`);
} finally {
  await runTeardowns();
}
