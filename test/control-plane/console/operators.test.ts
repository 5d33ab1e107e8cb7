import t from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';

/**
 * Who may use the admin API and the console's forms (docs/console.md): the admin token, or a
 * console session (auditors read, operators change at `sensitive`); an everyday session never.
 * Console roles: granted, replaced, revoked, the last operator kept; receipts name who acted.
 */
const ADMIN = 'console-admin-token-0123456789abcdef0123';

async function setup(t: Parameters<typeof buildSignedIn>[0]) {
  return buildSignedIn(t, { config: { adminToken: ADMIN } });
}

t.test('an everyday session, whatever its assurance, never reaches /admin/* or the console', async (t) => {
  const { signIn } = await setup(t);
  const { browser, identityId } = await signIn({ username: 'ada', assurance: 'sensitive' });
  const admin = await browser.get(`/admin/accounts/${identityId}`);
  t.equal(admin.statusCode, 401);
  t.equal(admin.json().reason, 'unauthorized');
  const page = await browser.get('/console', { accept: 'text/html' });
  t.equal(page.statusCode, 303);
  t.equal(page.headers.location, '/console/sign-in');
  const post = await browser.post(`/console/accounts/${identityId}/disable`, {});
  t.equal(post.statusCode, 401);
  t.equal(post.json().reason, 'console_session_required');
});

t.test('an auditor reads and is refused every change (403), with or without a step-up', async (t) => {
  const { signIn, app } = await setup(t);
  const { identityId: target } = await signIn({ username: 'cyd' });
  const { browser } = await signIn({ username: 'bea', console: 'auditor', assurance: 'sensitive' });
  t.equal((await browser.get(`/admin/accounts/${target}`)).statusCode, 200, 'reads the admin API');
  t.equal((await browser.get('/console/accounts?q=cyd', { accept: 'text/html' })).statusCode, 200);
  const write = await browser.post(`/admin/accounts/${target}/disable`);
  t.equal(write.statusCode, 403);
  t.equal(write.json().reason, 'forbidden');
  const form = await app.inject({
    method: 'POST',
    url: `/console/accounts/${target}/disable`,
    headers: {
      cookie: browser.header(),
      origin: 'http://localhost:4400',
      'content-type': 'application/x-www-form-urlencoded',
    },
    payload: '',
  });
  t.equal(form.statusCode, 403, 'the console form refuses an auditor');
  t.equal((await browser.get(`/admin/accounts/${target}`)).json().state, 'active');
});

t.test('an operator changes at sensitive only; the receipt names the operator, the admin token says so', async (t) => {
  const { signIn, services } = await setup(t);
  const { identityId: target } = await signIn({ username: 'cyd' });
  const { browser: plain } = await signIn({ username: 'ada', console: 'operator' });
  const low = await plain.post(`/admin/accounts/${target}/disable`);
  t.equal(low.statusCode, 403);
  t.equal(low.json().reason, 'insufficient_assurance');
  const stepUp = await plain.post(`/console/accounts/${target}/disable`, {}, { accept: 'text/html' });
  t.equal(stepUp.statusCode, 303, 'a console form without a step-up is sent to step up');
  t.match(stepUp.headers.location, /^\/auth\/step-up\?return=%2Fconsole%2Faccounts%2Fusr_cyd%3Fresume%3D/);
  t.equal((await plain.get(`/admin/accounts/${target}`)).json().state, 'active', 'nothing was done');

  const { browser, identityId: ada } = await signIn({ username: 'ada', console: 'operator', assurance: 'sensitive' });
  const done = await browser.post(`/admin/accounts/${target}/disable`);
  t.equal(done.statusCode, 200);
  const receipt = await services.storage.receipts.get(done.json().receipt);
  t.same(JSON.parse(receipt!.body).actor, { type: 'person', id: ada });
  const auto = await browser.app.inject({
    method: 'POST',
    url: `/admin/accounts/${target}/enable`,
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  t.same(JSON.parse((await services.storage.receipts.get(auto.json().receipt))!.body).actor, { type: 'admin_token' });
});

t.test(
  'roles: granted and replaced, the last operator kept (409 last_operator), grants mailed to other operators',
  async (t) => {
    const { signIn, app, services } = await setup(t);
    const { identityId: ada } = await signIn({ username: 'ada' });
    await signIn({ username: 'bea' });
    const call = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
      app.inject({ method, url, headers: { authorization: `Bearer ${ADMIN}` }, ...(payload ? { payload } : {}) });
    t.equal((await call('POST', '/admin/operators', { account: 'ada' })).json().role, 'operator');
    const row = await services.storage.emails.add({
      emailId: 'eml_ada',
      identityId: ada,
      email: 'ada@example.com',
      createdAt: 1,
      verifiedAt: null,
    });
    await services.storage.emails.markVerified(row.emailId, 2);
    const sent: string[] = [];
    const enqueue = services.mailer.enqueue.bind(services.mailer);
    services.mailer.enqueue = (mail) => {
      sent.push(`${mail.to}: ${mail.subject}`);
      enqueue(mail);
    };
    const granted = await call('POST', '/admin/operators', { account: 'bea', role: 'auditor' });
    t.equal(granted.statusCode, 200);
    t.same(sent, ['ada@example.com: [Keyplane] bea is now an auditor'], 'the other operator is told');
    const receipt = JSON.parse((await services.storage.receipts.get(granted.json().receipt))!.body);
    t.match(receipt, { kind: 'operator.granted', role: 'auditor', actor: { type: 'admin_token' } });
    const last = await call('DELETE', '/admin/operators/ada');
    t.equal(last.statusCode, 409);
    t.equal(last.json().reason, 'last_operator');
    const lowered = await call('POST', '/admin/operators', { account: 'ada', role: 'auditor' });
    t.equal(lowered.json().reason, 'last_operator', 'lowering the last operator is refused too');
    t.same(
      (await call('GET', '/admin/operators'))
        .json()
        .operators.map((o: { username: string; role: string }) => `${o.username}:${o.role}`),
      ['ada:operator', 'bea:auditor'],
    );
    t.equal((await call('DELETE', '/admin/operators/bea')).statusCode, 200);
    t.equal((await call('DELETE', '/admin/operators/bea')).json().reason, 'not_found');
    t.equal((await call('POST', '/admin/operators', { account: 'nobody' })).json().reason, 'not_found');
    t.equal((await call('POST', '/admin/operators', { account: 'bea', role: 'root' })).statusCode, 400);
  },
);

t.test(
  "the last operator's account is not deleted on any path (409 last_operator); with a second operator it is",
  async (t) => {
    const { signIn, app, services } = await setup(t);
    const { browser, identityId: ada } = await signIn({ username: 'ada', console: 'operator', assurance: 'sensitive' });
    const call = (method: 'POST' | 'DELETE', url: string, payload?: object) =>
      app.inject({ method, url, headers: { authorization: `Bearer ${ADMIN}` }, ...(payload ? { payload } : {}) });
    const byAdmin = await call('DELETE', `/admin/accounts/${ada}`);
    t.equal(byAdmin.statusCode, 409, 'the admin API');
    t.equal(byAdmin.json().reason, 'last_operator');
    const bySession = await browser.request('DELETE', `/admin/accounts/${ada}`);
    t.equal(bySession.json().reason, 'last_operator', 'the admin API with the console session');
    const byConsole = await browser.post(`/console/accounts/${ada}/delete`, { confirm: 'ada' });
    t.equal(byConsole.statusCode, 409, 'the console form');
    t.equal(byConsole.json().reason, 'last_operator');
    const bySelf = await browser.post('/account/delete', { confirm: 'ada' });
    t.equal(bySelf.statusCode, 409, "the account's own deletion");
    t.equal(bySelf.json().reason, 'last_operator');
    t.ok(await services.storage.identities.get(ada), 'the account stays');

    const { identityId: bea } = await signIn({ username: 'bea' });
    t.equal((await call('POST', '/admin/operators', { account: 'bea', role: 'auditor' })).statusCode, 200);
    t.equal((await call('DELETE', `/admin/accounts/${ada}`)).statusCode, 409, 'an auditor is no operator');
    t.equal((await call('POST', '/admin/operators', { account: 'bea', role: 'operator' })).statusCode, 200);
    const deleted = await call('DELETE', `/admin/accounts/${ada}`);
    t.equal(deleted.statusCode, 200, 'with another operator the account goes');
    t.equal(await services.storage.identities.get(ada), null);
    t.same(
      (await services.storage.operators.list()).map((o) => `${o.identityId}:${o.role}`),
      [`${bea}:operator`],
      'its role went with it',
    );
    t.equal((await call('DELETE', `/admin/accounts/${bea}`)).json().reason, 'last_operator', 'now bea is the last');
  },
);
