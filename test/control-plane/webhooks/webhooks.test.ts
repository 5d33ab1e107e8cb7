import t, { type Test } from 'tap';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { hashReceipt } from '#lib/ledger/receipt.js';
import { manualClock } from '../../helpers/build.js';
import { buildSignedIn, type Browser } from '../../helpers/signed-in.js';
import { ADMIN } from '../../helpers/oidc.js';
import { makeTestCa, startHttpsServer, type TestCa } from '../../helpers/tls.js';
import { until } from '../../helpers/until.js';
import { codeBlocksUnder } from '../../helpers/doc-blocks.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['health', 'account', 'orgs', 'clients', 'webhooks', 'admin'] as const;
const admin = { authorization: `Bearer ${ADMIN}` };

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  status: number;
}

/** A real https receiver (the test CA): records every POST and answers each path as planned (200 once the plan runs out). */
async function receiver(t: Test, tls: TestCa) {
  const received: Received[] = [];
  const planned = new Map<string, number[]>();
  const server = await startHttpsServer(t, tls, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const status = planned.get(req.url ?? '')?.shift() ?? 200;
      received.push({ path: req.url ?? '', headers: req.headers as Record<string, string>, body, status });
      res.statusCode = status;
      res.end();
    });
  });
  return {
    received,
    at: (path: string) => received.filter((r) => r.path === path),
    url: (path: string) => `${server.origin}${path}`,
    plan: (path: string, ...statuses: number[]) => planned.set(path, [...(planned.get(path) ?? []), ...statuses]),
  };
}

/** The clock starts at the real time: standardwebhooks checks `webhook-timestamp` against it (5 minutes). */
async function setup(t: Test, config: Record<string, unknown> = {}) {
  const tls = makeTestCa(t);
  const rx = await receiver(t, tls);
  const clock = manualClock(Date.now());
  const built = await buildSignedIn(t, {
    areas,
    now: clock.now,
    config: { adminToken: ADMIN, 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile, ...config },
  });
  const { app } = built;
  const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: Record<string, unknown>) =>
    app.inject({ method, url, headers: admin, ...(payload ? { payload } : {}) });
  /** Runs delivery rounds until `path` has `count` deliveries. */
  const delivered = (path: string, count = 1) =>
    until(`${count} deliveries at ${path}`, async () => {
      await app.kp.webhookDelivery.deliverDue();
      return rx.at(path).length >= count ? rx.at(path) : undefined;
    });
  return { ...built, rx, clock, api, delivered };
}

async function createOrg(browser: Browser, name: string): Promise<string> {
  const res = await browser.post('/auth/orgs/create', { name });
  if (res.statusCode !== 200) throw new Error(res.body);
  return res.json().slug as string;
}

t.test('an operator webhook gets the receipts it asked for, signed per Standard Webhooks', async (t) => {
  const { app, api, rx, signIn, delivered } = await setup(t);
  const created = await api('POST', '/admin/webhooks', {
    url: rx.url('/operator'),
    events: ['org.*'],
    description: 'audit sink',
  });
  t.equal(created.statusCode, 200, created.body);
  const { webhookId, secret, receipt } = created.json();
  t.match(secret, /^whsec_[A-Za-z0-9+/=]+$/);
  t.match(receipt, /^[0-9a-f]{64}$/, 'creating one leaves a receipt');

  const shown = await api('GET', `/admin/webhooks/${webhookId}`);
  t.equal(shown.statusCode, 200);
  t.notOk(shown.body.includes(secret.slice(6)), 'the secret is shown once only');
  t.match(shown.json(), { webhookId, url: rx.url('/operator'), events: ['org.*'], state: 'active' });
  t.equal((await api('GET', '/admin/webhooks')).json().webhooks.length, 1);

  const { browser } = await signIn({ username: 'ada' });
  await createOrg(browser, 'Ada Works');
  const [delivery] = await delivered('/operator');
  const payload = new Webhook(secret).verify(delivery!.body, delivery!.headers) as Record<string, unknown>;
  const data = payload['data'] as Record<string, unknown>;
  t.equal(payload['type'], 'org.created');
  t.equal(data['kind'], 'org.created');
  t.equal(payload['timestamp'], data['at']);
  const hash = hashReceipt(data);
  t.equal(payload['receipt_url'], `${app.kp.config.issuer}/receipts/${hash}`, 'data is the receipt, at its address');
  t.ok(await app.kp.storage.receipts.get(hash), 'the receipt the body carries is in the ledger');
  t.match(delivery!.headers['webhook-id'], /^msg_/);
  t.same(
    rx.received.map((r) => (JSON.parse(r.body) as { type: string }).type),
    ['org.created'],
    'session and webhook receipts did not pass the org.* filter',
  );
  t.throws(
    () => new Webhook('whsec_' + Buffer.alloc(24, 7).toString('base64')).verify(delivery!.body, delivery!.headers),
    'another secret does not verify',
  );
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /keyplane_outbox_delivered_total\{subscriber="webhook"\} 1/);
  t.match(metrics, /keyplane_outbox_queued\{subscriber="webhook"\} 0/);
  t.match(metrics, /keyplane_outbox_oldest_age_seconds\{subscriber="webhook"\} 0/);
});

t.test('after rotate-secret both secrets sign for 24 hours, then only the new one', async (t) => {
  const { api, rx, signIn, clock, delivered } = await setup(t);
  const { webhookId, secret: old } = (
    await api('POST', '/admin/webhooks', { url: rx.url('/r'), events: ['org.*'] })
  ).json();
  const rotated = await api('POST', `/admin/webhooks/${webhookId}/rotate-secret`);
  t.equal(rotated.statusCode, 200, rotated.body);
  const { secret: fresh } = rotated.json();
  t.not(fresh, old);
  const { browser } = await signIn({ username: 'ada' });
  await createOrg(browser, 'During');
  const [during] = await delivered('/r');
  const signatures = during!.headers['webhook-signature']!.split(' ');
  t.equal(signatures.length, 2, 'two space-separated signatures');
  t.ok(signatures.every((s) => s.startsWith('v1,')));
  t.ok(new Webhook(old).verify(during!.body, during!.headers), 'the old secret verifies');
  t.ok(new Webhook(fresh).verify(during!.body, during!.headers), 'the new secret verifies');

  clock.advance(24 * 3_600_000 + 1000);
  await createOrg(browser, 'After');
  const after = (await delivered('/r', 2))[1]!;
  t.equal(after.headers['webhook-signature']!.split(' ').length, 1, 'one signature once the overlap is over');
  const expected = new Webhook(fresh).sign(
    after.headers['webhook-id']!,
    new Date(Number(after.headers['webhook-timestamp']) * 1000),
    after.body,
  );
  t.equal(after.headers['webhook-signature'], expected, 'by the new secret');
});

t.test('a failed delivery is retried with the same webhook-id, and the log shows every attempt', async (t) => {
  const { api, rx, signIn, clock, delivered } = await setup(t);
  rx.plan('/flaky', 500, 503);
  const { webhookId, secret } = (
    await api('POST', '/admin/webhooks', { url: rx.url('/flaky'), events: ['org.created'] })
  ).json();
  const { browser } = await signIn({ username: 'ada' });
  await createOrg(browser, 'Flaky');
  await delivered('/flaky', 1);
  clock.advance(6000);
  await delivered('/flaky', 2);
  clock.advance(11_000);
  const attempts = await delivered('/flaky', 3);
  t.same(
    attempts.map((a) => a.status),
    [500, 503, 200],
  );
  t.equal(new Set(attempts.map((a) => a.headers['webhook-id'])).size, 1, 'the same message id each time');
  t.ok(new Webhook(secret).verify(attempts[2]!.body, attempts[2]!.headers));
  const log = (await api('GET', `/admin/webhooks/${webhookId}/deliveries`)).json();
  t.same(
    log.deliveries.map((d: { attempt: number; status: number }) => [d.attempt, d.status]),
    [
      [3, 200],
      [2, 503],
      [1, 500],
    ],
  );
});

t.test('a webhook failing for 24 hours is disabled, with a webhook.disabled receipt', async (t) => {
  const { app, api, rx, signIn, clock } = await setup(t);
  rx.plan('/down', ...Array<number>(40).fill(500));
  const { webhookId } = (await api('POST', '/admin/webhooks', { url: rx.url('/down'), events: ['org.*'] })).json();
  const watcher = (
    await api('POST', '/admin/webhooks', { url: rx.url('/watch'), events: ['webhook.disabled'] })
  ).json();
  const { browser } = await signIn({ username: 'ada' });
  await createOrg(browser, 'Down');
  let rounds = 0;
  while ((await api('GET', `/admin/webhooks/${webhookId}`)).json().state === 'active' && rounds++ < 40) {
    await app.kp.webhookDelivery.deliverDue();
    clock.advance(3_600_000);
  }
  const state = (await api('GET', `/admin/webhooks/${webhookId}`)).json();
  t.equal(state.state, 'disabled');
  t.ok(rx.at('/down').length >= 10, `retried for a day first (${rx.at('/down').length} attempts)`);
  const before = rx.at('/down').length;
  await app.kp.webhookDelivery.deliverDue();
  t.equal(rx.at('/down').length, before, 'nothing more is sent');
  const watched = await until('the webhook.disabled delivery', async () => {
    await app.kp.webhookDelivery.deliverDue();
    return rx.at('/watch')[0];
  });
  const disabled = JSON.parse(watched.body) as { type: string; data: Record<string, unknown> };
  t.equal(disabled.type, 'webhook.disabled');
  t.match(disabled.data, { webhookId, orgId: null, actor: { type: 'system' } });
  t.ok(watcher.webhookId);

  const again = await api('PUT', `/admin/webhooks/${webhookId}`, { state: 'active' });
  t.match(again.json(), { state: 'active', failingSince: null }, 'the operator may turn it on again');
});

t.test('the test button sends a webhook.tested receipt to that webhook alone', async (t) => {
  const { api, rx, delivered } = await setup(t);
  const one = (await api('POST', '/admin/webhooks', { url: rx.url('/one'), events: ['org.*'] })).json();
  await api('POST', '/admin/webhooks', { url: rx.url('/other'), events: ['*'] });
  const tested = await api('POST', `/admin/webhooks/${one.webhookId}/test`);
  t.equal(tested.statusCode, 200, tested.body);
  const [delivery] = await delivered('/one');
  t.match(JSON.parse(delivery!.body), { type: 'webhook.tested', data: { webhookId: one.webhookId } });
  t.equal(delivery!.headers['webhook-id'], tested.json().deliveryId);
  t.ok(new Webhook(one.secret).verify(delivery!.body, delivery!.headers));
  t.notOk(
    rx.at('/other').some((r) => r.body.includes('webhook.tested')),
    'the other webhook (on every type) did not get it',
  );
});

t.test(
  "an org's webhook sees the org, its clients and its members' memberships, never their life elsewhere",
  async (t) => {
    const { app, rx, signIn, delivered } = await setup(t);
    const { browser: owner, identityId: ownerId } = await signIn({ username: 'olga', assurance: 'sensitive' });
    const { browser: member, identityId: memberId } = await signIn({ username: 'mia' });
    const { browser: stranger } = await signIn({ username: 'sam' });
    const slug = await createOrg(owner, 'Olga Org');

    const body = { url: rx.url('/org'), events: ['org.*', 'client.*'] };
    const { browser: weakOwner } = await signIn({ username: 'olga', assurance: 'passkey' });
    t.equal((await weakOwner.post(`/org/${slug}/webhooks`, body)).json().reason, 'insufficient_assurance');
    t.equal((await stranger.post(`/org/${slug}/webhooks`, body)).statusCode, 404, 'a non-member learns nothing');
    const created = await owner.post(`/org/${slug}/webhooks`, body);
    t.equal(created.statusCode, 200, created.body);
    const { webhookId, secret } = created.json();

    t.equal((await owner.post(`/org/${slug}/members/invite`, { username: 'mia', role: 'admin' })).statusCode, 200);
    t.equal((await member.post(`/org/${slug}/members/accept`)).statusCode, 200);
    t.equal((await member.post(`/org/${slug}/webhooks`, body)).json().reason, 'forbidden', 'an admin is not an owner');
    t.equal((await member.get(`/org/${slug}/webhooks/${webhookId}`)).statusCode, 403);
    const orgApp = await owner.post('/apps/register', {
      client_name: 'Org app',
      redirect_uris: ['https://rp.example/cb'],
      org: slug,
    });
    t.equal(orgApp.statusCode, 201, orgApp.body);
    // Life elsewhere: the owner's own client, another org, a stranger's client.
    await owner.post('/apps/register', { client_name: 'Mine', redirect_uris: ['https://mine.example/cb'] });
    await createOrg(member, 'Mia Elsewhere');
    await stranger.post('/apps/register', { client_name: 'Theirs', redirect_uris: ['https://theirs.example/cb'] });
    t.equal((await owner.post(`/org/${slug}/members/remove`, { user: memberId })).statusCode, 200);

    // Every receipt that could go is queued by now.
    const got = (await delivered('/org', 4)).map(
      (r) => new Webhook(secret).verify(r.body, r.headers) as { type: string; data: Record<string, unknown> },
    );
    await app.kp.webhookDelivery.deliverDue();
    t.equal(rx.at('/org').length, 4, 'nothing else came');
    t.same(got.map((p) => p.type).sort(), [
      'client.registered',
      'org.member_invited',
      'org.member_joined',
      'org.member_removed',
    ]);
    t.equal(got.find((p) => p.type === 'client.registered')?.data['clientId'], orgApp.json().client_id);
    t.same(
      got.filter((p) => p.type.startsWith('org.member_')).map((p) => p.data['identityId']),
      [memberId, memberId, memberId],
      "the member's membership changes, and not the owner's personal client, the member's other org or a stranger's client",
    );
    t.ok(ownerId);
  },
);

/** An org with an owner at `sensitive`, a personal member, a managed account and an org webhook on `events`. */
async function orgWithWebhook(t: Test, path: string, events: string[]) {
  const context = await setup(t);
  const { app, rx, signIn } = context;
  const { browser: owner } = await signIn({ username: 'olga', assurance: 'sensitive' });
  const { browser: member, identityId: memberId } = await signIn({ username: 'mia' });
  const slug = await createOrg(owner, 'Olga Org');
  t.equal((await owner.post(`/org/${slug}/members/invite`, { username: 'mia', role: 'member' })).statusCode, 200);
  t.equal((await member.post(`/org/${slug}/members/accept`)).statusCode, 200);
  const { orgId } = (await app.kp.storage.orgs.getBySlug(slug))!;
  // An account the org manages, as its provisioning (JIT or SCIM) leaves it.
  const managedId = 'usr_managed';
  const now = app.kp.now();
  await app.kp.storage.identities.create({
    identityId: managedId,
    username: 'max',
    displayName: '',
    preferences: {},
    founder: false,
    managedBy: orgId,
    createdAt: now,
    updatedAt: now,
  });
  const created = await owner.post(`/org/${slug}/webhooks`, { url: rx.url(path), events });
  t.equal(created.statusCode, 200, created.body);
  await app.kp.webhookTargets.refresh();
  const secret = created.json().secret as string;
  const verified = (received: Received[]) =>
    received.map((r) => new Webhook(secret).verify(r.body, r.headers) as { type: string; data: Record<string, any> });
  return { ...context, member, memberId, managedId, slug, verified };
}

t.test("an org's webhook sees the life of an account the org manages, signed per Standard Webhooks", async (t) => {
  const { api, delivered, managedId, verified } = await orgWithWebhook(t, '/managed', ['account.*']);
  t.equal((await api('POST', `/admin/accounts/${managedId}/disable`)).statusCode, 200);
  const [got] = verified(await delivered('/managed'));
  t.equal(got!.type, 'account.disabled');
  t.match(got!.data, { kind: 'account.disabled', identityId: managedId, actor: { type: 'admin_token' } });
});

t.test("an org's webhook never sees a personal member's life elsewhere", async (t) => {
  const { app, api, rx, delivered, member, memberId, managedId, verified } = await orgWithWebhook(t, '/personal', [
    'account.*',
    'org.*',
    'client.*',
  ]);
  // The member's life elsewhere: they found another org and register a client of their own, the
  // operator disables and enables their account.
  await createOrg(member, 'Mia Elsewhere');
  t.equal(
    (await member.post('/apps/register', { client_name: 'Mine', redirect_uris: ['https://mine.example/cb'] }))
      .statusCode,
    201,
  );
  t.equal((await api('POST', `/admin/accounts/${memberId}/disable`)).statusCode, 200);
  t.equal((await api('POST', `/admin/accounts/${memberId}/enable`)).statusCode, 200);
  // Then a receipt the org does see: everything before it has been queued by now.
  t.equal((await api('POST', `/admin/accounts/${managedId}/disable`)).statusCode, 200);
  const got = verified(await delivered('/personal'));
  await app.kp.webhookDelivery.deliverDue();
  t.equal(rx.at('/personal').length, 1, 'nothing else came');
  t.match(got[0]!.data, { kind: 'account.disabled', identityId: managedId });
  t.notOk(
    rx.at('/personal').some((r) => r.body.includes(memberId)),
    "no delivery names the personal member's id",
  );
});

t.test(
  'destinations follow the guarded fetcher: internal ones refused, the operator alone may allow some',
  async (t) => {
    const tls = makeTestCa(t);
    const built = await buildSignedIn(t, {
      areas,
      config: { adminToken: ADMIN, 'fetch.caFile': tls.caFile, 'fetch.operatorPrivateTargets': ['127.0.0.1/32'] },
    });
    const { app, signIn } = built;
    const post = (url: string) =>
      app.inject({ method: 'POST', url: '/admin/webhooks', headers: admin, payload: { url, events: ['*'] } });
    for (const url of ['https://10.0.0.1/hook', 'https://169.254.169.254/latest/meta-data/', 'https://[::1]/hook']) {
      const res = await post(url);
      t.equal(res.statusCode, 400, url);
      t.equal(res.json().reason, 'fetch_private_address', url);
    }
    t.equal((await post('http://hooks.example/plain')).statusCode, 400, 'https only');
    t.equal(
      (await post('https://127.0.0.1:9/allowed')).statusCode,
      200,
      'fetch.operatorPrivateTargets lets the operator through',
    );
    const { browser } = await signIn({ username: 'olga', assurance: 'sensitive' });
    const slug = await createOrg(browser, 'Olga Org');
    const org = await browser.post(`/org/${slug}/webhooks`, { url: 'https://127.0.0.1:9/allowed', events: ['*'] });
    t.equal(org.json().reason, 'fetch_private_address', 'never an org');
    t.equal(
      (await app.inject({ method: 'GET', url: '/admin/webhooks' })).statusCode,
      401,
      'the admin API needs the token',
    );
    t.equal(
      (
        await app.inject({
          method: 'POST',
          url: '/admin/webhooks',
          headers: admin,
          payload: { url: 'https://a.example', events: ['Bad Type'] },
        })
      ).json().reason,
      'invalid_request',
    );
  },
);

t.test("docs/events.md's five lines verify a delivery, as written", async (t) => {
  const { api, rx, signIn, delivered } = await setup(t);
  const { secret } = (await api('POST', '/admin/webhooks', { url: rx.url('/doc'), events: ['org.*'] })).json();
  const { browser } = await signIn({ username: 'ada' });
  await createOrg(browser, 'Doc');
  const [delivery] = await delivered('/doc');
  const [block] = codeBlocksUnder('docs/events.md', 'Verifying a delivery');
  // Beside the project's node_modules, so that its import resolves as in a receiver's project.
  const file = join(fileURLToPath(new URL('.', import.meta.url)), `.doc-verify-${process.pid}.mjs`);
  writeFileSync(file, block!.text);
  t.teardown(() => rmSync(file, { force: true }));
  process.env['WEBHOOK_SECRET'] = secret;
  const { verifyDelivery } = (await import(file)) as {
    verifyDelivery: (body: string, headers: Record<string, string>) => { type: string };
  };
  t.equal(verifyDelivery(delivery!.body, delivery!.headers).type, 'org.created');
  t.throws(() => verifyDelivery(delivery!.body.replace('org.created', 'org.deleted'), delivery!.headers));
});
