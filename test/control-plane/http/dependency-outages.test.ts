import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { MemorySharedState } from '#lib/runtime/shared-state/memory.js';
import type { SharedState } from '#lib/runtime/shared-state/types.js';
import type { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import { DependencyUnavailableError, toDependencyError } from '#lib/errors/dependency-outage.js';
import { buildSignedIn, Browser } from '../../helpers/signed-in.js';
import { until } from '../../helpers/own-process.js';
import {
  ADMIN,
  authorizeUrl,
  basicAuth,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  redirectParams,
  registerClient,
  type Registered,
} from '../../helpers/oidc.js';

/**
 * Shared state whose Redis "goes away" on demand (for every key, or for the keys a predicate
 * picks): each operation then fails the way RedisSharedState fails, through the services'
 * dependency monitor, as a refused connection.
 */
class FlakyState implements SharedState {
  readonly kind = 'redis' as const;
  down: (key: string) => boolean = () => false;
  monitor: DependencyMonitor | undefined;
  private readonly inner = new MemorySharedState();

  private async guard<T>(key: string, work: () => Promise<T>): Promise<T> {
    if (this.down(key)) {
      const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
      throw this.monitor?.failure('redis', refused) ?? toDependencyError('redis', refused);
    }
    const value = await work();
    this.monitor?.succeeded('redis');
    return value;
  }

  incrWithTtl = (key: string, ttlMs: number) => this.guard(key, () => this.inner.incrWithTtl(key, ttlMs));
  setIfAbsent = (key: string, value: string, ttlMs: number) =>
    this.guard(key, () => this.inner.setIfAbsent(key, value, ttlMs));
  set = (key: string, value: string, ttlMs: number) => this.guard(key, () => this.inner.set(key, value, ttlMs));
  get = (key: string) => this.guard(key, () => this.inner.get(key));
  take = (key: string) => this.guard(key, () => this.inner.take(key));
  del = (key: string) => this.guard(key, () => this.inner.del(key));
  publish = (channel: string, message: string) => this.guard(channel, () => this.inner.publish(channel, message));
  subscribe = (channel: string, handler: (message: string) => void) =>
    this.guard(channel, () => this.inner.subscribe(channel, handler));
  close = () => this.inner.close();
}

async function setup(t: Parameters<typeof buildSignedIn>[0]) {
  const state = new FlakyState();
  const built = await buildSignedIn(t, { state, config: { adminToken: ADMIN } });
  state.monitor = built.services.dependencies;
  return { ...built, state };
}

/** A form POST to an OAuth endpoint, authenticated as `client` (client_secret_basic). */
function asClient(app: FastifyInstance, client: Registered, url: string, form: Record<string, string>) {
  return app.inject({
    method: 'POST',
    url,
    headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(form).toString(),
  });
}

const logLines = (logs: string[]) =>
  logs.flatMap((chunk) =>
    chunk
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l)),
  );

t.test('Redis going away answers 503 unavailable with Retry-After, logged once, and recovers', async (t) => {
  const { app, state, logs } = await setup(t);
  state.down = () => true;
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ method: 'GET', url: '/auth/assertion-options' });
    t.equal(res.statusCode, 503);
    t.equal(res.headers['retry-after'], '5');
    t.same(res.json(), {
      ok: false,
      reason: 'unavailable',
      message: 'shared state (Redis) is unavailable; retry shortly',
    });
  }
  const notReady = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(notReady.statusCode, 503, '/readyz says not ready meanwhile');
  t.match(notReady.json(), { reason: 'not_ready', message: /shared state down/ });

  state.down = () => false;
  const back = await app.inject({ method: 'GET', url: '/auth/assertion-options' });
  t.equal(back.statusCode, 200, 'the next request after Redis came back succeeds');
  t.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);

  // Over once Redis has answered for the settle period (a failover flaps; that is one outage).
  await until('the log says Redis is back', async () =>
    logLines(logs).some((line) => line.event === 'dependency.up') ? true : undefined,
  );
  const lines = logLines(logs);
  t.same(
    lines.filter((l) => typeof l.event === 'string' && l.event.startsWith('dependency.')).map((l) => l.event),
    ['dependency.down', 'dependency.up'],
    'one line when it went away, one when it came back',
  );
  t.match(
    lines.find((l) => l.event === 'dependency.down'),
    { level: 40, dependency: 'redis', kind: 'refused' },
  );
  t.same(
    lines.filter((l) => l.msg === 'request failed'),
    [],
    'no error line (and no stack) per failed request',
  );
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /kp_dependency_errors_total\{dependency="redis"\} [4-9]/, 'each failed call counted');
});

t.test('the token endpoint keeps its RFC 6749 shape: temporarily_unavailable beside the envelope', async (t) => {
  const { app, state } = await setup(t);
  const client = await registerClient(app);
  state.down = () => true;
  const res = await asClient(app, client, '/auth/token', {
    grant_type: 'authorization_code',
    code: 'abc',
    code_verifier: 'x',
    redirect_uri: 'https://notes.example.com/callback',
  });
  t.equal(res.statusCode, 503);
  t.equal(res.headers['retry-after'], '5');
  t.match(res.json(), {
    ok: false,
    reason: 'unavailable',
    error: 'temporarily_unavailable',
    error_description: 'shared state (Redis) is unavailable; retry shortly',
  });
});

t.test(
  'authorize: once the redirect URI is verified, an outage goes to the client as temporarily_unavailable',
  async (t) => {
    const { app, state } = await setup(t);
    const client = await registerClient(app);
    const browser = new Browser(app);
    // The per-address limit answers; parking the request for the sign-in page does not.
    state.down = (key) => key.startsWith('oidc:pending:');
    const res = await browser.get(authorizeUrl(goodRequest(client, pkcePair().challenge, { state: 'st-1' })));
    t.equal(res.statusCode, 302);
    const params = redirectParams(res);
    t.equal(params.base, 'https://notes.example.com/callback');
    t.equal(params.get('error'), 'temporarily_unavailable', 'RFC 6749 §4.1.2.1');
    t.equal(params.get('state'), 'st-1');
    t.equal(params.get('iss'), 'http://localhost:4400');

    state.down = () => true;
    const early = await browser.get(authorizeUrl(goodRequest(client, pkcePair().challenge)));
    t.equal(early.statusCode, 503, 'before the redirect URI is verified: a 503 here, never a redirect');
    t.equal(early.headers.location, undefined);
    t.match(early.body, /data-reason="unavailable"/, 'on the refusal page, for a browser');
    t.ok(early.headers['retry-after'], 'with Retry-After');
  },
);

t.test('introspection that cannot check revocation answers 503, never active: false', async (t) => {
  const { app, services, signIn } = await setup(t);
  const client = await registerClient(app);
  const { browser } = await signIn({ username: 'ada' });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  const token = (await exchangeCode(app, client, code, verifier)).json().access_token as string;
  // PostgreSQL goes away just as the grant behind the token is looked up.
  const oidc = services.storage.oidc;
  const getGrant = oidc.getGrant;
  oidc.getGrant = async () => {
    throw new DependencyUnavailableError('postgres', 'refused', 'ECONNREFUSED');
  };
  t.teardown(() => void (oidc.getGrant = getGrant));
  const res = await asClient(app, client, '/auth/introspect', { token });
  t.equal(res.statusCode, 503);
  t.match(res.json(), { reason: 'unavailable', error: 'temporarily_unavailable' });
  t.notOk('active' in res.json());
  const userinfo = await app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { authorization: `Bearer ${token}` },
  });
  t.equal(userinfo.statusCode, 503, 'userinfo likewise');
});
