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
