import t from 'tap';
import { ADMIN } from '../../helpers/oidc.js';
import {
  POLICY,
  evidence,
  gatewayKey,
  getConfig,
  postEvidence,
  registerGateway,
  setup,
  updatePolicy,
} from './setup.js';

const admin = { authorization: `Bearer ${ADMIN}` };

t.test('status is unknown without evidence, green with fresh matching evidence, stale once it expires', async (t) => {
  const { app, clock } = await setup(t);
  const client = await registerGateway(app);
  const url = `/gateway/status/${client.client_id}`;

  const before = await app.inject({ method: 'GET', url, headers: admin });
  t.equal(before.statusCode, 200);
  t.match(before.json(), {
    ok: true,
    client_id: client.client_id,
    status: 'unknown',
    reason: 'no_evidence',
    observed: [],
  });
  const declared = before.json().declared;
  t.match(declared, { version: 1, mode: 'enforce', routes: POLICY.routes, issued_at: String });
  const served = await getConfig(app, client);
  t.equal(`"${declared.hash}"`, served.headers['etag'], 'declared is exactly what the gateway is served');

  const key = await gatewayKey();
  await postEvidence(
    app,
    client,
    await evidence(key, client.client_id, clock.now(), {
      config: { version: 1, hash: declared.hash, mode: 'enforce' },
    }),
  );
  const green = (await app.inject({ method: 'GET', url, headers: admin })).json();
  t.match(green, { status: 'green', reason: 'enforcing_declared_config' });
  t.match(green.observed, [
    {
      instance: 'instance-one',
      gateway: 'https://app.example.com',
      fresh: true,
      config: { version: 1, hash: declared.hash, mode: 'enforce' },
      counts: { allowed: 3, refused: { unauthorized: 1 }, observed: {} },
      key_thumbprint: key.kid,
      last_enforcement_at: String,
      started_at: String,
    },
  ]);

  clock.advance(31_000);
  const stale = (await app.inject({ method: 'GET', url, headers: admin })).json();
  t.match(stale, { status: 'stale', reason: 'evidence_expired', observed: [{ fresh: false }] });
});

t.test('status is stale on a config mismatch after an update and while an instance fails closed', async (t) => {
  const { app, clock } = await setup(t);
  const client = await registerGateway(app);
  const url = `/gateway/status/${client.client_id}`;
  const v1 = (await app.inject({ method: 'GET', url, headers: admin })).json().declared;
  const key = await gatewayKey();
  await postEvidence(
    app,
    client,
    await evidence(key, client.client_id, clock.now(), { config: { version: 1, hash: v1.hash, mode: 'enforce' } }),
  );
  t.equal((await app.inject({ method: 'GET', url, headers: admin })).json().status, 'green');

  await updatePolicy(app, client, { mode: 'observe', routes: [] });
  const mismatch = (await app.inject({ method: 'GET', url, headers: admin })).json();
  t.match(mismatch, { status: 'stale', reason: 'config_mismatch', declared: { version: 2, mode: 'observe' } });

  clock.advance(1000);
  await postEvidence(
    app,
    client,
    await evidence(key, client.client_id, clock.now(), {
      config: { version: 2, hash: mismatch.declared.hash, mode: 'observe' },
    }),
  );
  t.equal((await app.inject({ method: 'GET', url, headers: admin })).json().status, 'green', 'the gateway caught up');

  await postEvidence(
    app,
    client,
    await evidence(key, client.client_id, clock.now(), { instance: 'instance-two', config: null }),
  );
  const closed = (await app.inject({ method: 'GET', url, headers: admin })).json();
  t.match(closed, { status: 'stale', reason: 'failing_closed' });
  t.equal(closed.observed.length, 2, 'each instance is listed');
});

t.test('a client without a gateway policy is unknown, never green', async (t) => {
  const { app, clock } = await setup(t);
  const client = await registerGateway(app, {});
  await postEvidence(app, client, await evidence(await gatewayKey(), client.client_id, clock.now()));
  const res = (await app.inject({ method: 'GET', url: `/gateway/status/${client.client_id}`, headers: admin })).json();
  t.match(res, { status: 'unknown', reason: 'no_config_declared', declared: null });
  t.equal(res.observed.length, 1, 'observation is still shown');
});

t.test("the owner's session may read the status; others may not", async (t) => {
  const { app, signIn } = await setup(t);
  const { browser: owner } = await signIn({ username: 'ada' });
  const registered = await owner.post('/register', {
    redirect_uris: ['https://app.example.com/_gate/callback'],
    gateway: POLICY,
  });
  t.equal(registered.statusCode, 201);
  const url = `/gateway/status/${registered.json().client_id}`;
  const mine = await owner.get(url);
  t.equal(mine.statusCode, 200);
  t.equal(mine.json().status, 'unknown');

  const { browser: other } = await signIn({ username: 'bob' });
  const theirs = await other.get(url);
  t.equal(theirs.statusCode, 404, "another account's client answers like a missing one");
  t.equal(theirs.json().reason, 'not_found');
  const anonymous = await app.inject({ method: 'GET', url });
  t.equal(anonymous.statusCode, 401);
  const badToken = await app.inject({ method: 'GET', url, headers: { authorization: 'Bearer wrong' } });
  t.equal(badToken.statusCode, 401);
  t.equal((await app.inject({ method: 'GET', url: '/gateway/status/cl_missing', headers: admin })).statusCode, 404);
});

t.test(
  "the owner's /apps page shows each gateway client's enforcement, green only with fresh matching evidence",
  async (t) => {
    const { app, clock, signIn } = await setup(t);
    const owner = await signIn({ username: 'gwowner', assurance: 'sensitive' });
    const created = await owner.browser.post('/apps/register', {
      client_name: 'Edge',
      redirect_uris: ['https://app.example.com/_gate/callback'],
      token_endpoint_auth_method: 'client_secret_basic',
      gateway: POLICY,
    });
    t.equal(created.statusCode, 201);
    const client = created.json() as { client_id: string; client_secret: string };
    await owner.browser.post('/apps/register', {
      client_name: 'Plain',
      redirect_uris: ['https://plain.example.com/cb'],
    });
    const page = async () => (await owner.browser.get('/apps', { accept: 'text/html' })).body;

    const before = await page();
    t.match(
      before,
      /data-gateway-status="unknown"><strong>unknown<\/strong>: no gateway has reported yet \(config version 1\)/,
    );
    t.match(before, /not a gateway/, 'a plain app says so');
    t.match(before, new RegExp(`href="/gateway/status/${client.client_id}"`));

    const served = await getConfig(app, client);
    const hash = String(served.headers['etag']).slice(1, -1);
    await postEvidence(
      app,
      client,
      await evidence(await gatewayKey(), client.client_id, clock.now(), {
        config: { version: 1, hash, mode: 'enforce' },
      }),
    );
    t.match(
      await page(),
      /data-gateway-status="green"><strong>green<\/strong>: every gateway reporting enforces the current config/,
    );
    clock.advance(31_000);
    t.match(await page(), /data-gateway-status="stale"><strong>stale<\/strong>: no fresh report from any gateway/);
  },
);
