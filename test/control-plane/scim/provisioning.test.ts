import t, { type Test } from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { manualClock } from '../../helpers/build.js';

const ADMIN = 'test-admin-token-0123456789abcdef';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';

async function setUp(t: Test) {
  const clock = manualClock();
  const built = await buildSignedIn(t, {
    now: clock.now,
    areas: ['orgs', 'scim', 'account', 'admin'],
    config: { adminToken: ADMIN },
  });
  const { app, services } = built;
  const owner = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  t.equal((await owner.browser.post('/auth/orgs/create', { name: 'Acme' })).statusCode, 200);
  const { token, tokenId } = (await owner.browser.post('/org/acme/scim-tokens')).json() as {
    token: string;
    tokenId: string;
  };
  const org = (await services.storage.orgs.getBySlug('acme'))!;
  // A proved mail domain, as POST /org/acme/mail-domains/…/verify leaves it.
  await services.storage.orgs.addMailDomain({
    domainId: 'mdm_1',
    orgId: org.orgId,
    domain: 'acme.example',
    proofToken: 'x',
    verifiedAt: null,
    checkedAt: null,
    failingSince: null,
    createdAt: clock.now(),
  });
  await services.storage.orgs.claimMailDomain('mdm_1', clock.now());
  const scim = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT', path: string, body?: unknown) =>
    app.inject({
      method,
      url: `/scim/v2/orgs/acme${path}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const adminAccount = async (id: string) =>
    (
      await app.inject({ method: 'GET', url: `/admin/accounts/${id}`, headers: { authorization: `Bearer ${ADMIN}` } })
    ).json();
  const receipts = async (kind: string) =>
    (await services.storage.receipts.list({ after: 0, limit: 100, kind })).map((r) => JSON.parse(r.body));
  return { ...built, clock, owner, org, token, tokenId, scim, adminAccount, receipts };
}

t.test(
  'a provisioned user is an account the org manages, with addresses verified only in its proved domains',
  async (t) => {
    const { scim, adminAccount, services, org, receipts, tokenId } = await setUp(t);
    const res = await scim('POST', '/Users', {
      schemas: [USER],
      userName: 'Ann.Lee@acme.example',
      displayName: 'Ann Lee',
      emails: [
        { type: 'work', value: 'Ann.Lee@acme.example', primary: 'True' },
        { type: 'home', value: 'ann@elsewhere.example' },
      ],
    });
    t.equal(res.statusCode, 201, res.body);
    const { id } = res.json();
    t.equal(res.headers.location, `http://localhost:4400/scim/v2/orgs/acme/Users/${id}`);
    const account = await adminAccount(id);
    t.match(account, { state: 'active', managedBy: { slug: 'acme' } });
    t.match(account.username, /^acme-[0-9a-f]{10}$/, 'the Keyplane username is generated');
    t.equal((await services.storage.identities.get(id))!.displayName, 'Ann Lee');
    const emails = await services.storage.emails.listByIdentity(id);
    t.same(
      emails.map((e) => [e.email, e.verifiedAt !== null]).sort(),
      [
        ['ann.lee@acme.example', true],
        ['ann@elsewhere.example', false],
      ],
      'verified only within the proved domain',
    );
    t.ok(await services.storage.orgs.member(org.orgId, id), 'a member of the org');

    // Receipts name the token and an opaque hash of the userName, never the name itself.
    const [created] = await receipts('scim.user_created');
    t.match(created, {
      actor: { type: 'scim_token', id: tokenId },
      orgId: org.orgId,
      identityId: id,
      userNameHash: /^[0-9a-f]{64}$/,
    });
    t.notOk(JSON.stringify(created).toLowerCase().includes('ann.lee@'), 'no userName in the receipt');

    // Dropping an address drops it from the account.
    const patched = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'remove', path: 'emails[type eq "home"]' }],
    });
    t.equal(patched.statusCode, 200, patched.body);
    t.same(
      (await services.storage.emails.listByIdentity(id)).map((e) => e.email),
      ['ann.lee@acme.example'],
    );
    t.equal((await receipts('scim.user_updated')).length, 1);
  },
);

t.test('active:false suspends: the live session ends, sign-in is refused, and active:true lifts it', async (t) => {
  const { scim, adminAccount, services, signIn, receipts, app } = await setUp(t);
  const { id } = (await scim('POST', '/Users', { schemas: [USER], userName: 'bob@acme.example' })).json();
  const username = (await services.storage.identities.get(id))!.username;
  const bob = await signIn({ username });
  t.equal((await bob.browser.get('/account?format=json')).statusCode, 200, 'a live session');

  const suspended = await scim('PATCH', `/Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
  });
  t.equal(suspended.statusCode, 200, suspended.body);
  t.equal(suspended.json().active, false);
  t.equal((await bob.browser.get('/account?format=json')).statusCode, 401, 'the session ended');
  t.equal((await adminAccount(id)).state, 'suspended');
  const again = await bob.browser.post('/test/sign-in', { username, founder: false, assurance: 'passkey' });
  t.equal(again.statusCode, 403);
  t.equal(again.json().reason, 'account_suspended');
  t.match(await receipts('scim.user_suspended'), [{ identityId: id, actor: { type: 'scim_token' } }]);
  t.equal((await scim('GET', `/Users/${id}`)).json().active, false);
  t.equal((await scim('GET', `/Users?filter=${encodeURIComponent('active eq false')}`)).json().totalResults, 1);

  // The operator's pause is apart: lifting the suspension leaves it.
  const disabled = await app.inject({
    method: 'POST',
    url: `/admin/accounts/${id}/disable`,
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  t.equal(disabled.statusCode, 200, disabled.body);
  const lifted = await scim('PATCH', `/Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'replace', value: { active: true } }],
  });
  t.equal(lifted.json().active, true);
  t.equal((await adminAccount(id)).state, 'disabled', 'still disabled by the operator');
  await app.inject({
    method: 'POST',
    url: `/admin/accounts/${id}/enable`,
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  t.equal((await adminAccount(id)).state, 'active');
  t.equal((await signIn({ username })).identityId, id, 'signs in again');
  t.equal((await receipts('scim.user_reactivated')).length, 1);
});

t.test('DELETE deletes the managed account and ends its sessions', async (t) => {
  const { scim, services, signIn, receipts } = await setUp(t);
  const { id } = (await scim('POST', '/Users', { schemas: [USER], userName: 'cy@acme.example' })).json();
  const cy = await signIn({ username: (await services.storage.identities.get(id))!.username });
  t.equal((await scim('DELETE', `/Users/${id}`)).statusCode, 204);
  t.equal(await services.storage.identities.get(id), null);
  t.equal((await cy.browser.get('/account?format=json')).statusCode, 401);
  t.equal((await scim('GET', `/Users/${id}`)).statusCode, 404);
  t.match(await receipts('scim.user_deleted'), [{ identityId: id }]);
  t.match(await receipts('account.deleted'), [{ identityId: id, actor: { type: 'scim_token' } }]);
});

t.test('/Users lists only accounts the org provisioned; a Group shows and changes only managed members', async (t) => {
  const { scim, owner, services, org, receipts } = await setUp(t);
  const { id: dee } = (await scim('POST', '/Users', { schemas: [USER], userName: 'dee@acme.example' })).json();
  const users = (await scim('GET', '/Users')).json();
  t.same(
    users.Resources.map((u: { id: string }) => u.id),
    [dee],
    'the owner, a personal member, is not listed',
  );
  const group = await scim('POST', '/Groups', { displayName: 'Eng (EMEA) ✓', members: [{ value: dee }] });
  t.equal(group.statusCode, 201, group.body);
  const { id: teamId, displayName } = group.json();
  t.equal(displayName, 'Eng (EMEA) ✓', 'kept exactly as sent');
  const teams = (await owner.browser.get('/org/acme/teams')).json().teams;
  t.match(teams, [{ name: 'eng-emea', displayName: 'Eng (EMEA) ✓', members: [dee] }]);
  // The org's admin adds the personal owner to the team; SCIM neither shows nor removes them.
  t.equal((await owner.browser.request('PUT', `/org/acme/teams/eng-emea/members/${owner.identityId}`)).statusCode, 200);
  t.same(
    (await scim('GET', `/Groups/${teamId}`)).json().members.map((m: { value: string }) => m.value),
    [dee],
  );
  const replaced = await scim('PATCH', `/Groups/${teamId}`, {
    schemas: [PATCH_OP],
    Operations: [
      { op: 'replace', path: 'members', value: [] },
      { op: 'replace', path: 'displayName', value: 'Engineering' },
    ],
  });
  t.equal(replaced.statusCode, 204, replaced.body);
  const after = (await owner.browser.get('/org/acme/teams')).json().teams;
  t.match(after, [{ name: 'eng-emea', displayName: 'Engineering', members: [owner.identityId] }], 'slug made once');
  t.match(await receipts('scim.group_updated'), [{ orgId: org.orgId, teamId, added: 0, removed: 1 }]);
  t.ok(services);
});

t.test('batched member PATCHes add and remove many members in one request', async (t) => {
  const { scim } = await setUp(t);
  const ids: string[] = [];
  for (let i = 0; i < 6; i++)
    ids.push((await scim('POST', '/Users', { schemas: [USER], userName: `u${i}@acme.example` })).json().id);
  const { id } = (await scim('POST', '/Groups', { displayName: 'All' })).json();
  const add = await scim('PATCH', `/Groups/${id}`, {
    schemas: [PATCH_OP],
    Operations: [
      { op: 'Add', path: 'members', value: ids.slice(0, 3).map((value) => ({ value })) },
      { op: 'Add', path: 'members', value: ids.slice(3).map((value) => ({ value })) },
    ],
  });
  t.equal(add.statusCode, 204, add.body);
  t.equal((await scim('GET', `/Groups/${id}`)).json().members.length, 6);
  const remove = await scim('PATCH', `/Groups/${id}`, {
    schemas: [PATCH_OP],
    Operations: [
      { op: 'Remove', path: 'members', value: [{ value: ids[0] }, { value: ids[1] }] },
      { op: 'remove', path: `members[value eq "${ids[2]}"]` },
    ],
  });
  t.equal(remove.statusCode, 204, remove.body);
  t.same(
    (await scim('GET', `/Groups/${id}`))
      .json()
      .members.map((m: { value: string }) => m.value)
      .sort(),
    ids.slice(3).sort(),
  );
});
