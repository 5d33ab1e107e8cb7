import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../control-plane/src/server.js';
import { TEST_MASTER_KEY, tempDir } from './build.js';
import { until } from './own-process.js';
import { SoftAuthenticator } from './soft-authenticator.js';

/**
 * A light sign-in load on a running control plane, over real HTTP, as the fault tests need it:
 * every answer is recorded with the phase it came in (before, during and after an outage), and
 * every receipt a completed sign-in was given is kept, to check afterwards that it was sealed.
 * Requests carry a deadline far above the dependency budgets: one that runs into it hung.
 */

export interface Answer {
  phase: string;
  path: string;
  status: number;
  reason?: string;
  retryAfter?: string;
  /** The request hit its deadline or the connection failed: no answer at all. */
  hung?: string;
}

const DEADLINE_MS = 20_000;

export async function call(
  base: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: any; headers: Headers }> {
  const origin = new URL(base).origin;
  const res = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json', origin },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(DEADLINE_MS),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = { text };
  }
  return { status: res.status, json, headers: res.headers };
}

export class SignInLoad {
  readonly answers: Answer[] = [];
  /** Receipt hashes handed to completed sign-ins and sign-ups. */
  readonly receipts: string[] = [];
  /** The body of every assertion-verify that completed a sign-in, to replay later. */
  readonly accepted: unknown[] = [];
  phase = 'before';
  private running = false;
  private workers: Promise<void>[] = [];
  private readonly authenticators: Array<{ authenticator: SoftAuthenticator; username: string }> = [];

  constructor(
    private readonly base: string,
    private readonly origin: string = base,
  ) {}

  /** One recorded request; a request that got no answer is recorded as hung. */
  async request(path: string, body?: unknown): Promise<{ status: number; json: any } | null> {
    try {
      const res = await call(this.base, path, body);
      this.answers.push({
        phase: this.phase,
        path: path.split('?')[0]!,
        status: res.status,
        ...(typeof res.json?.reason === 'string' ? { reason: res.json.reason } : {}),
        ...(res.headers.get('retry-after') ? { retryAfter: res.headers.get('retry-after')! } : {}),
      });
      return res;
    } catch (error) {
      this.answers.push({ phase: this.phase, path: path.split('?')[0]!, status: 0, hung: (error as Error).message });
      return null;
    }
  }

  /** Signs `count` accounts up (while every dependency answers). */
  async signUp(count: number, prefix = 'fault'): Promise<void> {
    for (let i = 0; i < count; i++) {
      const username = `${prefix}-${i}`;
      const authenticator = new SoftAuthenticator(this.origin);
      const begin = await call(this.base, '/auth/registration-options', { username });
      const done = await call(this.base, '/auth/registration-verify', {
        user: username,
        response: authenticator.create(begin.json.options),
        signupToken: begin.json.signupToken,
      });
      if (done.status !== 200) throw new Error(`sign-up ${done.status}: ${JSON.stringify(done.json)}`);
      this.receipts.push(done.json.receipt);
      this.authenticators.push({ authenticator, username });
    }
  }

  /** One passkey sign-in; true when it completed. */
  async signIn(authenticator: SoftAuthenticator): Promise<boolean> {
    const begin = await this.request('/auth/assertion-options');
    if (begin?.status !== 200) return false;
    const body = { response: authenticator.get(begin.json.options) };
    const done = await this.request('/auth/assertion-verify', body);
    if (done?.status !== 200) return false;
    this.receipts.push(done.json.receipt);
    this.accepted.push(body);
    return true;
  }

  /** Starts one worker per account, each signing in again and again until `stop`. */
  start(): void {
    this.running = true;
    this.workers = this.authenticators.map(async ({ authenticator }) => {
      while (this.running) {
        const ok = await this.signIn(authenticator);
        // A refused worker backs off a little, as a client honouring Retry-After would (shortened).
        if (!ok) await new Promise((resolve) => setTimeout(resolve, 100));
      }
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
  }

  /** Resolves once `count` sign-ins completed in the current phase. */
  signIns(count: number): Promise<true> {
    const phase = this.phase;
    return until(
      `${count} sign-ins in phase ${phase}`,
      async () => (this.completed(phase) >= count ? true : undefined),
      60_000,
    );
  }

  /** Resolves once `count` answers of the current phase were 503. */
  refusals(count: number): Promise<true> {
    const phase = this.phase;
    return until(
      `${count} answers of 503 in phase ${phase}`,
      async () => (this.count(phase, 503) >= count ? true : undefined),
      60_000,
    );
  }

  /** Completed sign-ins in `phase`. */
  completed(phase: string): number {
    return this.answers.filter((a) => a.phase === phase && a.path === '/auth/assertion-verify' && a.status === 200)
      .length;
  }

  /** Answers of `phase` with the given status. */
  count(phase: string, status: number): number {
    return this.answers.filter((a) => a.phase === phase && a.status === status).length;
  }

  /** Answers that are neither a success nor a 503 `unavailable` with Retry-After (a 500, a 4xx, a hang). */
  unexpected(): Answer[] {
    return this.answers.filter(
      (a) => !(a.status === 200 || (a.status === 503 && a.reason === 'unavailable' && a.retryAfter === '5')),
    );
  }
}

/** Polls `GET /receipts/{hash}` for each receipt until it is sealed; returns those that never were. */
export async function unsealedReceipts(base: string, hashes: readonly string[], timeoutMs = 60_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  const unsealed: string[] = [];
  for (const hash of new Set(hashes)) {
    let found = await call(base, `/receipts/${hash}`);
    while ((found.status !== 200 || found.json.pending) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      found = await call(base, `/receipts/${hash}`);
    }
    if (found.status !== 200 || found.json.pending) unsealed.push(hash);
  }
  return unsealed;
}

export interface LoadedControlPlane {
  server: RunningControlPlane;
  load: SignInLoad;
  /** Every log line the control plane wrote, parsed. */
  log: Array<Record<string, any>>;
}

/**
 * A control plane (in this process, over real HTTP) with `overrides` on top of what the fault
 * tests share (a free port, a temporary data dir, the test master key, limits out of the way,
 * quick sealing), `accounts` accounts signed up and a sign-in load running on them. Closed,
 * load first, when `t` ends.
 */
export async function controlPlaneUnderLoad(
  t: { teardown(fn: () => unknown): void },
  overrides: Record<string, unknown>,
  accounts = 4,
): Promise<LoadedControlPlane> {
  const log: Array<Record<string, any>> = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) log.push(JSON.parse(line));
      done();
    },
  });
  const config = loadControlPlaneConfig({
    env: {},
    overrides: {
      port: 0,
      dataDir: tempDir(t),
      masterKey: TEST_MASTER_KEY,
      logLevel: 'info',
      'limits.authPerIpPerMinute': 1_000_000,
      'limits.authPerAccountPerMinute': 1_000_000,
      'ledger.sealIntervalMs': 500,
      ...overrides,
    },
  });
  const server = await startControlPlane(config, { logStream });
  t.teardown(() => server.close());
  const load = new SignInLoad(server.url);
  await load.signUp(accounts);
  load.start();
  t.teardown(() => load.stop());
  return { server, load, log };
}
