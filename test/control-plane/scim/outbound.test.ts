import t, { type Test } from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { manualClock } from '../../helpers/build.js';
import { makeTestCa } from '../../helpers/tls.js';
import { startScimmyServer } from '../../helpers/scimmy-server.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { clientParty, recordConsent } from '../../../control-plane/src/consent/gate.js';
import { codeBlocksUnder } from '../../helpers/doc-blocks.js';
import { goodRequest, obtainCode, pkcePair } from '../../helpers/oidc.js';

/** Outbound SCIM (docs/scim.md#outbound-scim): an org's members pushed to its app's SCIM server, here SCIMMY's. */

const ADMIN = 'test-admin-token-0123456789abcdef';
const admin = { authorization: `Bearer ${ADMIN}` };
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const REMOTE_TOKEN = 'remote-scim-token-0123456789';

async function setUp(t: Test, fetch: Record<string, unknown> = { 'fetch.allowPrivateTargets': true }) {
  const tls = makeTestCa(t);
  const remote = await startScimmyServer(t, tls, REMOTE_TOKEN);
  const clock = manualClock(Date.now());
  const built = await buildSignedIn(t, {
    now: clock.now,
    areas: ['orgs', 'scim', 'account', 'clients', 'admin', 'oidc'],
    config: { adminToken: ADMIN, 'fetch.caFile': tls.caFile, ...fetch },
  });
  const { app, services } = built;
  const owner = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  t.equal((await owner.browser.post('/auth/orgs/create', { name: 'Acme' })).statusCode, 200);
  const org = (await services.storage.orgs.getBySlug('acme'))!;
  const { token } = (await owner.browser.post('/org/acme/scim-tokens')).json() as { token: string };
  /** The org's directory (Entra ID, Okta) provisioning a managed account through Keyplane's own SCIM server. */
  const directory = (method: 'POST' | 'PATCH', path: string, body: unknown) =>
    app.inject({
      method,
      url: `/scim/v2/orgs/acme${path}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
      payload: JSON.stringify(body),
    });
  const provision = async (userName: string) => {
    const res = await directory('POST', '/Users', { schemas: [USER], userName, displayName: userName.split('@')[0] });
    t.equal(res.statusCode, 201, res.body);
    return res.json().id as string;
  };
  const scimTarget = { base_url: remote.baseUrl, token: REMOTE_TOKEN };
  const registerApp = async (extra: Record<string, unknown> = {}) => {
    const res = await owner.browser.post('/apps/register', {
      org: 'acme',
      client_name: 'Wiki',
      redirect_uris: ['https://wiki.example/cb'],
      scim: scimTarget,
      ...extra,
    });
    t.equal(res.statusCode, 201, res.body);
    return res.json() as { client_id: string; revision: number; registration_access_token: string };
  };
  /** Delivery rounds until nothing is due (the loop's timer does the same every poll). */
  const sync = async () => {
    for (let round = 0; round < 10; round++) if ((await services.scimPushDelivery.deliverDue()) === 0) return;
  };
  const state = async (clientId: string) => {
    const res = await app.inject({ method: 'GET', url: `/admin/clients/${clientId}/scim`, headers: admin });
    t.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const receipts = async (kind: string) =>
    (await services.storage.receipts.list({ after: 0, limit: 100, kind })).map((r) => JSON.parse(r.body));
  return { ...built, clock, remote, owner, org, directory, provision, registerApp, scimTarget, sync, state, receipts };
}

t.test('a managed account and its team appear remotely; suspension pushes active:false', async (t) => {
  const { app, remote, owner, directory, provision, registerApp, sync, state, receipts, clock } = await setUp(t);
  const ann = await provision('ann@acme.example');
  const { client_id: clientId } = await registerApp();
  await sync();
  const pushed = remote.user('ann@acme.example');
  t.match(pushed, { userName: 'ann@acme.example', externalId: ann, active: true, displayName: 'ann' });
  t.notOk(remote.user('olivia'), 'a personal member who never approved the app is not pushed');

  // Added to a team after the first sync: the Group follows, its member the remote user.
  t.equal((await owner.browser.post('/org/acme/teams', { name: 'eng', displayName: 'Engineering' })).statusCode, 201);
  t.equal((await owner.browser.request('PUT', `/org/acme/teams/eng/members/${ann}`, {})).statusCode, 200);
  await sync();
  const group = [...remote.groups.values()].find((g) => g['displayName'] === 'Engineering');
  t.ok(group, 'the team is a Group at the remote end');
  t.same(
    (group!['members'] as Array<{ value: string }>).map((m) => m.value),
    [pushed!.id],
  );
  t.equal(remote.users.size, 1, 'one remote user, however many pushes');

  clock.advance(1000);
  const suspended = await directory('PATCH', `/Users/${ann}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'replace', path: 'active', value: false }],
  });
  t.equal(suspended.statusCode, 200, suspended.body);
  await sync();
  t.equal(remote.user('ann@acme.example')!['active'], false, 'deprovisioned as active:false, not deleted');

  const sync1 = await state(clientId);
  t.match(sync1, { ok: true, base_url: remote.baseUrl, pending: 0, failures: [] });
  t.equal(sync1.last_sync, new Date(clock.now()).toISOString());
  const owned = await owner.browser.get(`/apps/${clientId}/scim`);
  t.equal(owned.statusCode, 200, 'the org owner reads it too');
  t.match(await receipts('scim.outbound.user_provisioned'), [
    { clientId, identityId: ann, matched: false, actor: { type: 'system' } },
  ]);
  t.match(await receipts('scim.outbound.user_deactivated'), [{ clientId, identityId: ann }]);
  t.match(await receipts('scim.outbound.configured'), [{ clientId, actor: { type: 'person' } }]);
  const page = await owner.browser.get('/apps?org=acme');
  t.match(page.body, /data-scim-sync="ok"/, '/apps shows the sync state');
  t.notOk(
    JSON.stringify(await app.kp.storage.scimPush.target(clientId)).includes(REMOTE_TOKEN),
    'the token is stored sealed',
  );
});

t.test('a personal member appears only after approving the app, and leaves as active:false', async (t) => {
  const { app, remote, owner, signIn, registerApp, sync, clock } = await setUp(t);
  const bob = await signIn({ username: 'bob' });
  t.equal((await owner.browser.post('/org/acme/members/invite', { username: 'bob' })).statusCode, 200);
  t.equal((await bob.browser.post('/org/acme/members/accept', {})).statusCode, 200);
  const { client_id: clientId } = await registerApp();
  await sync();
  t.notOk(remote.user('bob'), 'a member who never approved the app is not pushed');

  const client = (await app.kp.storage.clients.get(clientId))!;
  await app.kp.storage.transaction((tx) =>
    recordConsent(app.kp, tx, {
      identityId: bob.identityId,
      party: clientParty(client),
      release: { scopes: ['openid'] },
      at: clock.now(),
    }),
  );
  await sync();
  t.match(remote.user('bob'), { externalId: bob.identityId, active: true });

  const removed = await owner.browser.post('/org/acme/members/remove', { user: bob.identityId });
  t.equal(removed.statusCode, 200, removed.body);
  await sync();
  t.equal(remote.user('bob')!['active'], false, 'a removed member is deactivated');
});

t.test(
  'approving the app on the authorization page pushes the member at once, without waiting for a reconcile',
  async (t) => {
    const { remote, owner, signIn, registerApp, sync } = await setUp(t);
    const bob = await signIn({ username: 'bob' });
    t.equal((await owner.browser.post('/org/acme/members/invite', { username: 'bob' })).statusCode, 200);
    t.equal((await bob.browser.post('/org/acme/members/accept', {})).statusCode, 200);
    const client = await registerApp();
    await sync();
    t.notOk(remote.user('bob'));
    const { challenge } = pkcePair();
    await obtainCode(
      bob.browser,
      goodRequest({ client_id: client.client_id }, challenge, {
        redirect_uri: 'https://wiki.example/cb',
        scope: 'openid',
      }),
    );
    await sync();
    t.match(remote.user('bob'), { externalId: bob.identityId, active: true }, 'the new approval queued bob');
  },
);

t.test('an existing remote user is matched by userName instead of duplicated', async (t) => {
  const { remote, provision, registerApp, sync, receipts } = await setUp(t);
  const seeded = remote.seed('cy@acme.example');
  const cy = await provision('cy@acme.example');
  await registerApp();
  await sync();
  t.equal(remote.users.size, 1, 'no second user');
  t.match(remote.users.get(seeded), { userName: 'cy@acme.example', externalId: cy, active: true });
  t.match(await receipts('scim.outbound.user_provisioned'), [{ identityId: cy, matched: true }]);
  t.ok(
    remote.requests.some((r) => r.startsWith('GET /scim/v2/Users?filter=')),
    'looked up before creating',
  );
});

t.test('a failing remote is retried with backoff and reported in failures', async (t) => {
  const { remote, provision, registerApp, sync, state, clock } = await setUp(t);
  const dee = await provision('dee@acme.example');
  remote.failWith(503);
  const { client_id: clientId } = await registerApp();
  await sync();
  const failing = await state(clientId);
  t.match(failing, { last_sync: null, pending: 1 });
  t.match(failing.failures, [{ resource: 'user', id: dee, state: 'pending', attempts: 1, last_status: 503 }]);

  const sent = remote.requests.length;
  await sync();
  t.equal(remote.requests.length, sent, 'not again before the backoff ends');
  clock.advance(10_000);
  await sync();
  t.ok(remote.requests.length > sent, 'tried again after the wait');
  t.match((await state(clientId)).failures, [{ id: dee, attempts: 2 }]);

  remote.failWith(0);
  clock.advance(3_600_000);
  await sync();
  t.match(remote.user('dee@acme.example'), { active: true });
  t.match(await state(clientId), { pending: 0, failures: [] });
});

t.test('the operator sets and removes a SCIM server with the admin token', async (t) => {
  const { app, remote, provision, sync, scimTarget, receipts } = await setUp(t);
  const eve = await provision('eve@acme.example');
  const registered = await app.inject({
    method: 'POST',
    url: '/register',
    headers: admin,
    payload: {
      client_name: 'Operator app',
      redirect_uris: ['https://ops.example/cb'],
      access: { humans: true, agents: false, orgs: [{ slug: 'acme' }] },
    },
  });
  t.equal(registered.statusCode, 201, registered.body);
  const clientId = registered.json().client_id as string;
  const set = await app.inject({
    method: 'PUT',
    url: `/admin/clients/${clientId}/scim`,
    headers: admin,
    payload: scimTarget,
  });
  t.equal(set.statusCode, 200, set.body);
  await sync();
  t.match(remote.user('eve@acme.example'), { externalId: eve });
  t.match(await receipts('scim.outbound.configured'), [{ clientId, actor: { type: 'admin_token' } }]);
  const removed = await app.inject({ method: 'DELETE', url: `/admin/clients/${clientId}/scim`, headers: admin });
  t.equal(removed.statusCode, 200, removed.body);
  const gone = await app.inject({ method: 'GET', url: `/admin/clients/${clientId}/scim`, headers: admin });
  t.equal(gone.statusCode, 404);
});

t.test(
  'refusals: only org or operator clients, only an owner at sensitive, never with the registration token',
  async (t) => {
    const { app, owner, signIn, registerApp, scimTarget, org } = await setUp(t);
    const reason = (res: { json(): { reason?: string } }) => res.json().reason;

    // A personal client takes no SCIM server, whoever asks.
    const personal = await owner.browser.post('/apps/register', {
      client_name: 'Mine',
      redirect_uris: ['https://mine.example/cb'],
      scim: scimTarget,
    });
    t.equal(personal.statusCode, 400, personal.body);
    t.equal(reason(personal), 'invalid_client_metadata');
    const mine = (
      await owner.browser.post('/apps/register', { client_name: 'Mine', redirect_uris: ['https://mine.example/cb'] })
    ).json().client_id as string;
    const byAdmin = await app.inject({
      method: 'PUT',
      url: `/admin/clients/${mine}/scim`,
      headers: admin,
      payload: scimTarget,
    });
    t.equal(byAdmin.statusCode, 400, byAdmin.body);
    t.equal(reason(byAdmin), 'invalid_client_metadata');

    // Below sensitive: refused, even for an owner.
    const plain = await signIn({ username: 'pat', assurance: 'passkey' });
    await app.kp.storage.orgs.addMember(org.orgId, { identityId: plain.identityId, role: 'owner', addedAt: 1 });
    const weak = await plain.browser.post('/apps/register', {
      org: 'acme',
      client_name: 'Weak',
      redirect_uris: ['https://weak.example/cb'],
      scim: scimTarget,
    });
    t.equal(weak.statusCode, 403, weak.body);
    t.equal(reason(weak), 'insufficient_assurance');
    const viaRegister = await plain.browser.post('/register', {
      org: 'acme',
      client_name: 'Weak',
      redirect_uris: ['https://weak.example/cb'],
      scim: scimTarget,
    });
    t.equal(viaRegister.statusCode, 403, viaRegister.body);

    // An admin of the org manages its apps, but the SCIM server is an owner's.
    const adam = await signIn({ username: 'adam', assurance: 'sensitive' });
    await app.kp.storage.orgs.addMember(org.orgId, { identityId: adam.identityId, role: 'admin', addedAt: 1 });
    const { client_id: clientId, revision, registration_access_token: rat } = await registerApp({ scim: undefined });
    const asAdmin = await adam.browser.post(`/apps/${clientId}/update`, { revision, scim: scimTarget });
    t.equal(asAdmin.statusCode, 403, asAdmin.body);
    t.equal(reason(asAdmin), 'forbidden');
    t.notOk(await app.kp.storage.scimPush.target(clientId));

    // The registration access token is the client's own: it never names a SCIM server.
    const viaToken = await app.inject({
      method: 'PUT',
      url: `/register/${clientId}`,
      headers: { authorization: `Bearer ${rat}` },
      payload: { client_id: clientId, revision, redirect_uris: ['https://wiki.example/cb'], scim: scimTarget },
    });
    t.equal(viaToken.statusCode, 403, viaToken.body);

    for (const bad of [
      { base_url: 'ftp://scim.example', token: 'x' },
      { base_url: 'http://scim.example/v2', token: 'x' },
      { base_url: 'https://scim.example/v2?x=1', token: 'x' },
      { base_url: 'https://scim.example/v2', token: 'two words' },
      'https://scim.example',
    ]) {
      const res = await owner.browser.post(`/apps/${clientId}/update`, { revision, scim: bad });
      t.equal(res.statusCode, 400, `${JSON.stringify(bad)}: ${res.body}`);
      t.equal(reason(res), 'invalid_client_metadata');
    }

    // The owner at sensitive may, and removes it with null.
    const set = await owner.browser.post(`/apps/${clientId}/update`, { revision, scim: scimTarget });
    t.equal(set.statusCode, 200, set.body);
    t.ok(await app.kp.storage.scimPush.target(clientId));
    const cleared = await owner.browser.post(`/apps/${clientId}/update`, { revision: set.json().revision, scim: null });
    t.equal(cleared.statusCode, 200, cleared.body);
    t.notOk(await app.kp.storage.scimPush.target(clientId));
  },
);

t.test(
  "docs/scim.md's outbound commands run as written, to an operator client reaching a private address",
  async (t) => {
    // The operator's own clients may reach private addresses named by fetch.operatorPrivateTargets (docs/fetch.md).
    const { app, remote, provision, sync } = await setUp(t, { 'fetch.operatorPrivateTargets': ['127.0.0.1/32'] });
    const fay = await provision('fay@acme.example');
    const registered = await app.inject({
      method: 'POST',
      url: '/register',
      headers: admin,
      payload: {
        client_name: 'Operator app',
        redirect_uris: ['https://ops.example/cb'],
        access: { humans: true, agents: false, orgs: [{ slug: 'acme' }] },
      },
    });
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    const [block] = codeBlocksUnder('docs/scim.md', 'Outbound SCIM');
    t.equal(block?.lang, 'bash');
    const env = {
      ...process.env,
      ISSUER: address,
      CLIENT_ID: registered.json().client_id as string,
      KEYPLANE_ADMIN_TOKEN: ADMIN,
      APP_SCIM_URL: remote.baseUrl,
      APP_SCIM_TOKEN: REMOTE_TOKEN,
    };
    // Run beside the server, which answers from this process: never a synchronous spawn.
    const run = await promisify(execFile)('bash', ['-e', '-o', 'pipefail', '-c', block!.text], {
      env,
      timeout: 30_000,
    });
    // The two answers come back to back, one JSON object each.
    const [set, state] = run.stdout
      .replace(/\}\s*\{"ok"/, '}\n{"ok"')
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    t.match(set, { ok: true, receipt: /^[0-9a-f]{64}$/ });
    t.match(state, { ok: true, base_url: remote.baseUrl, failures: [] });
    await sync();
    t.match(remote.user('fay@acme.example'), { externalId: fay, active: true });
  },
);
