import t, { type Test } from 'tap';
import { buildSignedIn, type Browser } from '../../helpers/signed-in.js';
import { ADMIN } from '../../helpers/oidc.js';
import { createTestDatabase, postgresAvailability } from '../../helpers/postgres.js';

const app1 = {
  client_name: 'Acme portal',
  redirect_uris: ['https://portal.acme.example/callback'],
  token_endpoint_auth_method: 'client_secret_basic',
};

/**
 * Org-owned OIDC clients over HTTP on both storage backends: admins and owners register, list,
 * edit, rotate and revoke the org's clients; members get 403, outsiders 404; every change receipted.
 */
async function setUp(t: Test, databaseUrl?: string) {
  const built = await buildSignedIn(t, { config: { adminToken: ADMIN, ...(databaseUrl ? { databaseUrl } : {}) } });
  const owner = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  const admin = await built.signIn({ username: 'adam', assurance: 'sensitive' });
  const member = await built.signIn({ username: 'mel', assurance: 'sensitive' });
  const outsider = await built.signIn({ username: 'otto', assurance: 'sensitive' });
  const ok = async (browser: Browser, url: string, body: Record<string, unknown> = {}) => {
    const res = await browser.post(url, body);
    if (res.statusCode >= 300) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  await ok(owner.browser, '/auth/orgs/create', { name: 'Acme' });
  await ok(owner.browser, '/org/acme/members/invite', { username: 'adam', role: 'admin' });
  await ok(admin.browser, '/org/acme/members/accept');
  await ok(owner.browser, '/org/acme/members/invite', { username: 'mel', role: 'member' });
  await ok(member.browser, '/org/acme/members/accept');
  const org = (await built.services.storage.orgs.getBySlug('acme'))!;
  return { ...built, owner, admin, member, outsider, org };
}

function suite(databaseUrl?: () => Promise<string>) {
  return async (t: Test) => {
    const { services, owner, admin, member, outsider, org } = await setUp(
      t,
      databaseUrl ? await databaseUrl() : undefined,
    );
    const receiptOf = async (hash: string) => JSON.parse((await services.storage.receipts.get(hash))!.body);

    // Registering for the org: admins and owners through /apps/register and /register.
    const viaApps = await admin.browser.post('/apps/register', { ...app1, org: 'acme' });
    t.equal(viaApps.statusCode, 201, viaApps.body);
    const clientId = viaApps.json().client_id as string;
    t.equal((await services.storage.clients.get(clientId))?.ownerId, org.orgId, 'the org owns it');
    t.match(await receiptOf(viaApps.json().receipt), { kind: 'client.registered', clientId, ownerId: org.orgId });
    const viaRegister = await owner.browser.post('/register', {
      ...app1,
      client_name: 'Acme CLI',
      token_endpoint_auth_method: 'none',
      org: 'acme',
    });
    t.equal(viaRegister.statusCode, 201, viaRegister.body);
    t.equal((await services.storage.clients.get(viaRegister.json().client_id))?.ownerId, org.orgId);
    t.same(
      (await admin.browser.get('/apps?format=json')).json().clients,
      [],
      "the org's apps are not the admin's personal ones",
    );

    for (const [who, browser, status, reason] of [
      ['a member', member.browser, 403, 'forbidden'],
      ['an outsider', outsider.browser, 404, 'not_found'],
    ] as const) {
      const apps = await browser.post('/apps/register', { ...app1, org: 'acme' });
      t.equal(apps.statusCode, status, `${who} cannot register for the org at /apps/register`);
      t.equal(apps.json().reason, reason);
      t.equal((await browser.post('/register', { ...app1, org: 'acme' })).json().reason, reason, `${who} at /register`);
      const list = await browser.get('/apps?format=json&org=acme');
      t.equal(list.statusCode, status, `${who} cannot list the org's apps`);
      t.equal(
        (await browser.post(`/apps/${clientId}/update`, { revision: 1, client_name: 'Mine now' })).json().reason,
        reason,
        `${who} cannot edit`,
      );
      t.equal((await browser.post(`/apps/${clientId}/rotate-secret`)).json().reason, reason, `${who} cannot rotate`);
      t.equal((await browser.post(`/apps/${clientId}/revoke`)).json().reason, reason, `${who} cannot revoke`);
    }
    t.equal((await owner.browser.post('/apps/register', { ...app1, org: 'nope' })).json().reason, 'not_found');
    const adminToken = await owner.browser.request('POST', '/register', JSON.stringify({ ...app1, org: 'acme' }), {
      authorization: `Bearer ${ADMIN}`,
      'content-type': 'application/json',
    });
    t.equal(adminToken.json().reason, 'invalid_request', 'the admin token registers operator clients, not org ones');

    const list = await owner.browser.get('/apps?format=json&org=acme');
    t.equal(list.statusCode, 200);
    t.same(
      list
        .json()
        .clients.map((c: { client_name: string }) => c.client_name)
        .sort(),
      ['Acme CLI', 'Acme portal'],
    );
    const page = await admin.browser.get('/apps?org=acme', { accept: 'text/html' });
    t.match(page.body, /Acme portal/, 'the page lists them for an admin too');

    const updated = await admin.browser.post(`/apps/${clientId}/update`, { revision: 1, client_name: 'Acme portal 2' });
    t.equal(updated.statusCode, 200, updated.body);
    t.match(await receiptOf(updated.json().receipt), { kind: 'client.updated', clientId });
    const rotated = await owner.browser.post(`/apps/${clientId}/rotate-secret`);
    t.equal(rotated.statusCode, 200, rotated.body);
    t.match(rotated.json(), { client_secret: /^[A-Za-z0-9_-]{43}$/ });
    t.match(await receiptOf(rotated.json().receipt), { kind: 'client.secret_rotated', clientId });
    const revoked = await admin.browser.post(`/apps/${clientId}/revoke`);
    t.equal(revoked.statusCode, 200, revoked.body);
    t.match(await receiptOf(revoked.json().receipt), { kind: 'client.deleted', clientId });
    t.equal(await services.storage.clients.get(clientId), null);

    // Demoted to member, the former admin loses the org's apps at once.
    t.equal(
      (await owner.browser.post('/org/acme/members/role', { user: admin.identityId, role: 'member' })).statusCode,
      200,
    );
    t.equal((await admin.browser.get('/apps?format=json&org=acme')).statusCode, 403);
  };
}

t.test('org-owned clients on SQLite', suite());
const postgres = await postgresAvailability();
if (!postgres.run) t.test('org-owned clients on PostgreSQL', { skip: postgres.reason }, () => undefined);
else
  t.test(
    'org-owned clients on PostgreSQL',
    suite(() => createTestDatabase(t)),
  );
