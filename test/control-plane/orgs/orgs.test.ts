import t, { type Test } from 'tap';
import { build } from '../../helpers/build.js';
import { signUp, type TestAccount } from '../../helpers/accounts.js';

async function setUp(t: Test) {
  const { app } = await build(t);
  const alice = await signUp(app, 'alice');
  const bob = await signUp(app, 'bob');
  const carol = await signUp(app, 'carol');
  const post = (who: TestAccount, url: string, payload: Record<string, unknown> = {}) =>
    app.inject({ method: 'POST', url, headers: who.headers, payload });
  const view = async (who: TestAccount, slug: string) =>
    (await app.inject({ method: 'GET', url: `/org/${slug}?format=json`, headers: who.headers })).json();
  return { app, alice, bob, carol, post, view };
}

t.test('creating an org makes the caller its owner, and the dashboard has the contract shape', async (t) => {
  const { app, alice, bob, post, view } = await setUp(t);
  const res = await post(alice, '/auth/orgs/create', { name: 'Acme Widgets', website: 'https://acme.example/' });
  t.equal(res.statusCode, 200);
  const created = res.json();
  t.equal(created.slug, 'acme-widgets');
  t.match(created.receipt, /^[0-9a-f]{64}$/);
  const body = await view(alice, 'acme-widgets');
  t.same(body, {
    ok: true,
    slug: 'acme-widgets',
    name: 'Acme Widgets',
    website: 'https://acme.example/',
    role: 'owner',
    members: [{ user: alice.identityId, username: 'alice', role: 'owner' }],
    sites: [],
    rating: null,
    teams: [],
  });
  const again = (await post(alice, '/auth/orgs/create', { name: 'Acme Widgets' })).json();
  t.not(again.slug, 'acme-widgets', 'a taken slug gets a suffix');
  const outsider = await app.inject({ method: 'GET', url: '/org/acme-widgets?format=json', headers: bob.headers });
  t.equal(outsider.statusCode, 404, 'non-members cannot see the org');
  t.equal(
    (await app.inject({ method: 'GET', url: '/org/nope?format=json', headers: bob.headers })).json().reason,
    'not_found',
  );
  t.equal((await app.inject({ method: 'GET', url: '/org/acme-widgets?format=json' })).statusCode, 401);
  t.equal((await post(alice, '/auth/orgs/create', { name: '   ' })).json().reason, 'invalid_request');
  t.equal(
    (await post(alice, '/auth/orgs/create', { name: 'X', website: 'http://x.example/' })).json().reason,
    'invalid_site_url',
  );
  const page = await app.inject({
    method: 'GET',
    url: '/org/acme-widgets',
    headers: { ...alice.headers, accept: 'text/html' },
  });
  t.equal(page.statusCode, 200);
  t.match(page.body, /Acme Widgets/);
  t.match(page.headers['content-security-policy'], /script-src/);
});

t.test('sites: https only, the first is primary, promote and remove', async (t) => {
  const { alice, post, view } = await setUp(t);
  await post(alice, '/auth/orgs/create', { name: 'Acme' });
  for (const [url, refusal] of [
    ['http://acme.example/', 'invalid_site_url'],
    ['https://u:p@acme.example/', 'invalid_site_url'],
    ['https://10.1.2.3/', 'invalid_site_url'],
  ] as const) {
    const res = await post(alice, '/org/acme/websites/add', { url });
    t.equal(res.statusCode, 400, url);
    t.equal(res.json().reason, refusal);
  }
  const first = (await post(alice, '/org/acme/websites/add', { url: 'https://acme.example/', label: 'Shop' })).json();
  t.equal(first.primary, true);
  t.match(first.receipt, /^[0-9a-f]{64}$/);
  const second = (await post(alice, '/org/acme/websites/add', { url: 'https://blog.acme.example/' })).json();
  t.equal(second.primary, false);
  t.equal((await post(alice, '/org/acme/websites/add', { url: 'https://acme.example/' })).json().reason, 'conflict');
  let v = await view(alice, 'acme');
  t.same(
    v.sites.map((s: { siteId: string; primary: boolean; label: string | null }) => [s.siteId, s.primary, s.label]),
    [
      [first.siteId, true, 'Shop'],
      [second.siteId, false, null],
    ],
  );
  t.match(v.sites[0].proof.dns, { name: '_keyplane.acme.example', type: 'TXT' });
  t.equal((await post(alice, '/org/acme/websites/primary', { siteId: second.siteId })).statusCode, 200);
  v = await view(alice, 'acme');
  t.same(
    v.sites.map((s: { primary: boolean }) => s.primary),
    [false, true],
  );
  t.equal((await post(alice, '/org/acme/websites/primary', { siteId: 'site_nope' })).json().reason, 'not_found');
  t.match((await post(alice, '/org/acme/websites/remove', { siteId: second.siteId })).json(), {
    ok: true,
    receipt: /^[0-9a-f]{64}$/,
  });
  v = await view(alice, 'acme');
  t.same(
    v.sites.map((s: { siteId: string; primary: boolean }) => [s.siteId, s.primary]),
    [[first.siteId, true]],
    'the remaining site became primary',
  );
  t.equal((await post(alice, '/org/acme/websites/remove', { siteId: second.siteId })).json().reason, 'not_found');
});

t.test('invites: shown on /account, accepted once, with the invited role', async (t) => {
  const { app, alice, bob, carol, post, view } = await setUp(t);
  await post(alice, '/auth/orgs/create', { name: 'Acme' });
  t.equal(
    (await post(alice, '/org/acme/members/invite', { username: 'nobody', role: 'member' })).json().reason,
    'not_found',
  );
  const invited = await post(alice, '/org/acme/members/invite', { username: 'Bob', role: 'admin' });
  t.equal(invited.statusCode, 200);
  t.equal(invited.json().user, bob.identityId);
  const account = (await app.inject({ method: 'GET', url: '/account?format=json', headers: bob.headers })).json();
  t.same(account.invites, [{ slug: 'acme', name: 'Acme', role: 'admin' }]);
  const html = await app.inject({ method: 'GET', url: '/account', headers: { ...bob.headers, accept: 'text/html' } });
  t.match(html.body, /action="\/org\/acme\/members\/accept"/);
  t.equal((await post(carol, '/org/acme/members/accept')).json().reason, 'not_found', 'no invite, no entry');
  const accepted = await post(bob, '/org/acme/members/accept');
  t.match(accepted.json(), { ok: true, role: 'admin', receipt: /^[0-9a-f]{64}$/ });
  t.equal((await post(bob, '/org/acme/members/accept')).json().reason, 'not_found', 'an invite is used once');
  t.equal((await view(bob, 'acme')).role, 'admin');
  t.same((await app.inject({ method: 'GET', url: '/account?format=json', headers: bob.headers })).json().orgs, [
    { slug: 'acme', name: 'Acme', role: 'admin' },
  ]);
  t.equal((await post(alice, '/org/acme/members/invite', { username: 'bob' })).json().reason, 'already_member');
  t.equal(
    (await post(bob, '/org/acme/members/invite', { username: 'carol', role: 'owner' })).json().reason,
    'forbidden',
    'an admin cannot invite an owner',
  );
  t.equal(
    (await post(carol, '/org/acme/members/invite', { username: 'carol' })).statusCode,
    404,
    'outsiders cannot invite',
  );
  const form = await app.inject({
    method: 'POST',
    url: '/org/acme/members/invite',
    headers: { ...alice.headers, 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    payload: 'username=carol&role=member',
  });
  t.equal(form.statusCode, 303, 'a plain form post goes back to the dashboard');
  t.equal(form.headers.location, '/org/acme');
});

t.test("an inviter removed or demoted below the invite's role leaves no invite behind", async (t) => {
  const { app, alice, bob, carol, post, view } = await setUp(t);
  const dave = await signUp(app, 'dave');
  await post(alice, '/auth/orgs/create', { name: 'Acme' });
  await post(alice, '/org/acme/members/invite', { username: 'bob', role: 'admin' });
  t.equal((await post(bob, '/org/acme/members/accept')).statusCode, 200);
  // Bob, an admin, invites his own second account (carol) as admin and dave as a member.
  t.equal((await post(bob, '/org/acme/members/invite', { username: 'carol', role: 'admin' })).statusCode, 200);
  t.equal((await post(bob, '/org/acme/members/invite', { username: 'dave', role: 'member' })).statusCode, 200);
  const invites = async (who: TestAccount) =>
    (await app.inject({ method: 'GET', url: '/account?format=json', headers: who.headers })).json().invites;
  t.equal((await invites(carol)).length, 1);

  // The owner removes Bob: his pending invites are void.
  t.equal((await post(alice, '/org/acme/members/remove', { user: bob.identityId })).statusCode, 200);
  t.same(await invites(carol), [], 'no longer offered on /account');
  const refused = await post(carol, '/org/acme/members/accept');
  t.equal(refused.statusCode, 404);
  t.equal(refused.json().reason, 'not_found');
  t.equal((await post(dave, '/org/acme/members/accept')).json().reason, 'not_found');
  t.equal((await view(carol, 'acme')).reason, 'not_found', 'carol is not a member');

  // Added again, Bob does not revive the invites he sent before his removal.
  await post(alice, '/org/acme/members/invite', { username: 'bob', role: 'admin' });
  await post(bob, '/org/acme/members/accept');
  t.equal(
    (await post(carol, '/org/acme/members/accept')).json().reason,
    'not_found',
    'removed and re-added: still void',
  );

  // Demoted below the invite's role (an admin invite needs an admin), his new invite is void too.
  t.equal((await post(bob, '/org/acme/members/invite', { username: 'carol', role: 'admin' })).statusCode, 200);
  t.equal((await post(alice, '/org/acme/members/role', { user: bob.identityId, role: 'member' })).statusCode, 200);
  t.equal((await post(carol, '/org/acme/members/accept')).json().reason, 'not_found', 'demoted: void');

  // An invite whose inviter still could send it is accepted as before.
  t.equal((await post(alice, '/org/acme/members/invite', { username: 'carol', role: 'admin' })).statusCode, 200);
  t.match((await post(carol, '/org/acme/members/accept')).json(), { ok: true, role: 'admin' });
});

t.test('roles: admins manage, only owners touch the owner role, the last owner stays', async (t) => {
  const { alice, bob, carol, post, view } = await setUp(t);
  await post(alice, '/auth/orgs/create', { name: 'Acme' });
  for (const [who, role] of [
    [bob, 'admin'],
    [carol, 'member'],
  ] as const) {
    await post(alice, '/org/acme/members/invite', { username: who.username, role });
    await post(who, '/org/acme/members/accept');
  }
  t.equal(
    (await post(carol, '/org/acme/members/role', { user: carol.identityId, role: 'admin' })).json().reason,
    'forbidden',
    'a member cannot manage',
  );
  t.equal((await post(carol, '/org/acme/websites/add', { url: 'https://acme.example/' })).json().reason, 'forbidden');
  t.equal(
    (await post(bob, '/org/acme/members/role', { user: carol.identityId, role: 'owner' })).json().reason,
    'forbidden',
    'an admin cannot grant owner',
  );
  t.equal(
    (await post(bob, '/org/acme/members/role', { user: alice.identityId, role: 'member' })).json().reason,
    'forbidden',
    'an admin cannot demote an owner',
  );
  t.equal((await post(bob, '/org/acme/members/remove', { user: alice.identityId })).json().reason, 'forbidden');
  const demoteLast = await post(alice, '/org/acme/members/role', { user: alice.identityId, role: 'admin' });
  t.equal(demoteLast.statusCode, 409);
  t.equal(demoteLast.json().reason, 'last_owner');
  t.equal((await post(alice, '/org/acme/members/remove', { user: alice.identityId })).json().reason, 'last_owner');
  t.match((await post(bob, '/org/acme/members/role', { user: carol.identityId, role: 'admin' })).json(), {
    ok: true,
    receipt: /^[0-9a-f]{64}$/,
  });
  t.match((await post(alice, '/org/acme/members/role', { user: bob.identityId, role: 'owner' })).json(), { ok: true });
  t.match(
    (await post(alice, '/org/acme/members/role', { user: bob.identityId, role: 'owner' })).json(),
    { ok: true },
    'no change is fine',
  );
  t.match(
    (await post(bob, '/org/acme/members/role', { user: alice.identityId, role: 'admin' })).json(),
    { ok: true },
    'with two owners one may step down',
  );
  t.equal((await post(bob, '/org/acme/members/role', { user: 'usr_nope', role: 'admin' })).json().reason, 'not_found');
  t.equal((await post(bob, '/org/acme/members/remove', { user: 'usr_nope' })).json().reason, 'not_found');
  t.match((await post(alice, '/org/acme/members/remove', { user: carol.identityId })).json(), {
    ok: true,
    receipt: /^[0-9a-f]{64}$/,
  });
  t.same(
    (await view(bob, 'acme')).members.map((m: { username: string; role: string }) => [m.username, m.role]),
    [
      ['alice', 'admin'],
      ['bob', 'owner'],
    ],
  );
  t.equal(
    (await post(bob, '/org/acme/members/role', { user: bob.identityId, role: 'member' })).json().reason,
    'last_owner',
  );
});

// docs/errors.md#one-error-path: the org pages and the forms on them answer a browser's refusal
// with a page (the dashboard or the account page again where the form was), scripts the envelope.
t.test("a browser's refusal on the org pages is a page; JSON callers keep the envelope", async (t) => {
  const { app, alice, bob, post } = await setUp(t);
  await post(alice, '/auth/orgs/create', { name: 'Acme' });
  const browserGet = (who: TestAccount, url: string, accept: string) =>
    app.inject({ method: 'GET', url, headers: { ...who.headers, accept, 'accept-language': 'de' } });
  const formPost = (who: TestAccount, url: string, form: Record<string, string>) =>
    app.inject({
      method: 'POST',
      url,
      headers: { ...who.headers, accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(form).toString(),
    });

  const page = await browserGet(bob, '/org/acme', 'text/html,application/xhtml+xml,*/*;q=0.8');
  t.equal(page.statusCode, 404, 'not a member: the same status as the envelope');
  t.match(page.headers['content-type'], /^text\/html/);
  t.match(page.body, '<code data-reason="not_found">');
  t.match(page.body, '<html lang="de"', "in the person's language");
  t.match(page.body, '<h1>Das ist so nicht möglich</h1>', 'the words of a refused page, not of a sign-in request');
  t.match(page.headers['content-security-policy'], /script-src 'nonce-/);
  for (const accept of ['application/json', '*/*']) {
    const json = await browserGet(bob, '/org/acme', accept);
    t.equal(json.statusCode, 404);
    t.equal(json.body, JSON.stringify({ ok: false, reason: 'not_found', message: 'no such organization' }), accept);
  }

  const again = await formPost(alice, '/org/acme/websites/add', { url: 'http://acme.example/', label: 'Shop' });
  t.equal(again.statusCode, 400);
  t.match(again.headers['content-type'], /^text\/html/);
  t.match(again.body, '<h1>Acme</h1>', 'the dashboard again');
  t.match(again.body, '<code data-reason="invalid_site_url">');
  t.match(again.body, 'value="http://acme.example/"', 'with what was typed');
  t.match(again.body, 'value="Shop"');
  const outsider = await formPost(bob, '/org/acme/websites/add', { url: 'https://acme.example/' });
  t.equal(outsider.statusCode, 404);
  t.match(outsider.body, '<code data-reason="not_found">', 'no dashboard for a non-member: the shared page');
  t.notMatch(outsider.body, '<h1>Acme</h1>');

  const account = await formPost(alice, '/auth/orgs/create', { name: 'X', website: 'http://x.example/' });
  t.equal(account.statusCode, 400);
  t.match(account.body, 'data-form="profile"', 'the account page again, where the form is');
  t.match(account.body, '<code data-reason="invalid_site_url">');
  t.match(account.body, 'id="org-name" name="name" type="text" required maxlength="80" value="X"');
  const accept = await formPost(bob, '/org/acme/members/accept', {});
  t.equal(accept.statusCode, 404);
  t.match(accept.body, 'data-form="profile"');

  const script = await post(alice, '/org/acme/websites/add', { url: 'http://acme.example/' });
  t.equal(script.json().reason, 'invalid_site_url', 'a JSON body still gets the envelope');
  t.match(script.headers['content-type'], /^application\/json/);
});
