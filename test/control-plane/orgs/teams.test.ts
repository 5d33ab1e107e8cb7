import t, { type Test } from 'tap';
import { decodeJwt } from 'jose';
import { buildSignedIn, type Browser } from '../../helpers/signed-in.js';
import { ADMIN, exchangeCode, goodRequest, obtainCode, pkcePair, refresh, registerClient } from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers).
const areas = ['orgs', 'oidc', 'discovery', 'clients'] as const;

/** Teams in organizations (docs/orgs.md#teams) and the `groups` scope. */

async function setUp(t: Test) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const alice = await built.signIn({ username: 'alice' });
  const bob = await built.signIn({ username: 'bob' });
  const carol = await built.signIn({ username: 'carol' });
  const erin = await built.signIn({ username: 'erin' });
  t.equal((await alice.browser.post('/auth/orgs/create', { name: 'Acme' })).statusCode, 200);
  const { orgs } = built.services.storage;
  const org = (await orgs.getBySlug('acme'))!;
  await orgs.addMember(org.orgId, { identityId: bob.identityId, role: 'member', addedAt: 1 });
  await orgs.addMember(org.orgId, { identityId: carol.identityId, role: 'member', addedAt: 2 });
  const call = (who: Browser, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
    who.request(method, url, payload);
  return { ...built, alice, bob, carol, erin, call };
}

t.test('an org admin creates, renames and deletes teams and sets their members; refusals', async (t) => {
  const { alice, bob, carol, erin, call } = await setUp(t);
  const created = await call(alice.browser, 'POST', '/org/acme/teams', { name: 'eng', displayName: 'Engineering' });
  t.equal(created.statusCode, 201);
  t.match(created.json(), { ok: true, name: 'eng', displayName: 'Engineering', receipt: /^[0-9a-f]{64}$/ });

  const refusals: Array<[Browser, string, string, unknown, number, string]> = [
    [alice.browser, 'POST', '/org/acme/teams', { name: 'Eng Team' }, 400, 'invalid_request'],
    [alice.browser, 'POST', '/org/acme/teams', { name: 'x'.repeat(64) }, 400, 'invalid_request'],
    [alice.browser, 'POST', '/org/acme/teams', { name: 'eng' }, 409, 'conflict'],
    [carol.browser, 'POST', '/org/acme/teams', { name: 'ops' }, 403, 'forbidden'],
    [erin.browser, 'POST', '/org/acme/teams', { name: 'ops' }, 404, 'not_found'],
    [alice.browser, 'PUT', `/org/acme/teams/eng/members/${erin.identityId}`, {}, 404, 'not_found'],
    [alice.browser, 'PUT', `/org/acme/teams/nope/members/${bob.identityId}`, {}, 404, 'not_found'],
    [carol.browser, 'PUT', `/org/acme/teams/eng/members/${carol.identityId}`, {}, 403, 'forbidden'],
    [alice.browser, 'DELETE', `/org/acme/teams/eng/members/${carol.identityId}`, undefined, 404, 'not_found'],
    [alice.browser, 'PUT', '/org/acme/teams/eng', { displayName: 'a\u0000b' }, 400, 'invalid_request'],
  ];
  for (const [who, method, url, payload, status, reason] of refusals) {
    const res = await call(who, method as 'POST', url, payload);
    t.equal(res.statusCode, status, `${method} ${url} ${JSON.stringify(payload)}`);
    t.equal(res.json().reason, reason);
  }

  const added = await call(alice.browser, 'PUT', `/org/acme/teams/eng/members/${bob.identityId}`, {});
  t.equal(added.statusCode, 200);
  t.match(added.json().receipt, /^[0-9a-f]{64}$/);
  t.same((await call(alice.browser, 'PUT', `/org/acme/teams/eng/members/${bob.identityId}`, {})).json(), { ok: true });
  const renamed = await call(alice.browser, 'PUT', '/org/acme/teams/eng', { displayName: 'Engineering (EMEA)' });
  t.match(renamed.json(), { ok: true, name: 'eng', displayName: 'Engineering (EMEA)' });
  const listed = await call(carol.browser, 'GET', '/org/acme/teams');
  t.same(listed.json(), {
    ok: true,
    teams: [{ name: 'eng', displayName: 'Engineering (EMEA)', members: [bob.identityId] }],
  });

  await call(alice.browser, 'POST', '/org/acme/teams', { name: 'tmp' });
  t.equal((await call(alice.browser, 'DELETE', '/org/acme/teams/tmp')).statusCode, 200);
  t.equal((await call(alice.browser, 'PUT', `/org/acme/teams/tmp/members/${bob.identityId}`, {})).statusCode, 404);
  t.equal((await call(alice.browser, 'DELETE', '/org/acme/teams/tmp')).statusCode, 404);

  const removed = await call(alice.browser, 'DELETE', `/org/acme/teams/eng/members/${bob.identityId}`);
  t.equal(removed.statusCode, 200);
  t.same((await call(carol.browser, 'GET', '/org/acme/teams')).json().teams[0].members, []);
});

t.test('the dashboard shows the teams and its plain forms change them', async (t) => {
  const { alice, bob, carol, call } = await setUp(t);
  const form = (url: string, body: Record<string, string>) =>
    alice.browser.request('POST', url, new URLSearchParams(body).toString(), {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'text/html',
    });
  const created = await form('/org/acme/teams', { name: 'eng', displayName: 'Engineering' });
  t.equal(created.statusCode, 303);
  t.equal(created.headers.location, '/org/acme#teams-h');
  t.equal((await form('/org/acme/teams/eng/members/add', { user: bob.identityId })).statusCode, 303);
  const refused = await form('/org/acme/teams', { name: 'Bad Name' });
  t.equal(refused.statusCode, 400, 'a refused form shows the dashboard again');
  t.match(refused.body, /role="alert"/);
  const page = await alice.browser.get('/org/acme', { accept: 'text/html' });
  t.match(page.body, /id="teams-h"/);
  t.match(page.body, /<li data-team="eng"><strong>Engineering<\/strong> <code>eng<\/code>: bob/);
  t.match(page.body, /data-action="create-team"/);
  const asMember = await carol.browser.get('/org/acme', { accept: 'text/html' });
  t.match(asMember.body, /data-team="eng"/, 'a member sees the teams');
  t.notMatch(asMember.body, /data-action="create-team"/, 'but cannot change them');
  t.same((await call(alice.browser, 'GET', '/org/acme?format=json')).json().teams, [
    { name: 'eng', displayName: 'Engineering', members: [bob.identityId] },
  ]);
});

t.test(
  'scope groups states the teams as "<org>/<team>" in the ID token and userinfo, only when registered',
  async (t) => {
    const { app, alice, bob, call } = await setUp(t);
    await call(alice.browser, 'POST', '/org/acme/teams', { name: 'eng' });
    await call(alice.browser, 'PUT', `/org/acme/teams/eng/members/${bob.identityId}`, {});
    const client = await registerClient(app, { scope: 'openid groups offline_access' });
    const { verifier, challenge } = pkcePair();
    const { code } = await obtainCode(
      bob.browser,
      goodRequest(client, challenge, { scope: 'openid groups offline_access' }),
    );
    const tokens = (await exchangeCode(app, client, code, verifier)).json();
    t.same(decodeJwt(tokens.id_token).groups, ['acme/eng']);
    const info = await app.inject({
      method: 'GET',
      url: '/auth/userinfo',
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    t.same(info.json().groups, ['acme/eng']);

    const plain = await registerClient(app);
    t.notOk(
      String((plain as { scope?: string }).scope)
        .split(' ')
        .includes('groups'),
      'groups is registered only by name',
    );
    const pair = pkcePair();
    const other = await obtainCode(bob.browser, goodRequest(plain, pair.challenge, { scope: 'openid groups' }));
    const unregistered = (await exchangeCode(app, plain, other.code, pair.verifier)).json();
    t.equal(decodeJwt(unregistered.id_token).groups, undefined);
    const discovery = (await app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    t.ok(discovery.scopes_supported.includes('groups'));
    t.ok(discovery.claims_supported.includes('groups'));
  },
);

t.test('access.orgs[].teams admits team members only; leaving the team ends the grant it admitted', async (t) => {
  const { app, services, alice, bob, carol, call } = await setUp(t);
  await call(alice.browser, 'POST', '/org/acme/teams', { name: 'eng' });
  await call(alice.browser, 'PUT', `/org/acme/teams/eng/members/${bob.identityId}`, {});
  const client = await registerClient(app, { access: { humans: true, orgs: [{ slug: 'acme', teams: ['eng'] }] } });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(bob.browser, goodRequest(client, challenge));
  const tokens = (await exchangeCode(app, client, code, verifier)).json();
  t.ok(tokens.refresh_token, 'bob, in the team, gets tokens');

  const refused = await carol.browser.get(
    `/auth/authorize?${new URLSearchParams(goodRequest(client, challenge) as Record<string, string>)}`,
  );
  t.not(refused.statusCode, 302, 'carol, in the org but not the team, gets no code');
  t.match(refused.body, /access_denied|not/i);

  const events: Array<{ type: string; cause?: string }> = [];
  services.events.subscribe((_tx, e) => void events.push(e as { type: string; cause?: string }));
  await call(alice.browser, 'DELETE', `/org/acme/teams/eng/members/${bob.identityId}`);
  t.match(events, [{ type: 'token.family_revoked', cause: 'access_ended' }, { type: 'team.member_removed' }]);
  t.equal((await refresh(app, client, tokens.refresh_token)).json().error, 'invalid_grant');
});

t.test('a client names only teams of orgs its owner administers', async (t) => {
  const { alice, carol } = await setUp(t);
  const register = (who: Browser, slug: string) =>
    who.post('/register', {
      client_name: 'Team app',
      redirect_uris: ['https://team.example/cb'],
      access: { humans: true, orgs: [{ slug, teams: ['eng'] }] },
    });
  t.equal((await register(alice.browser, 'acme')).statusCode, 201);
  const refused = await register(carol.browser, 'acme');
  t.equal(refused.statusCode, 400);
  t.equal(refused.json().error, 'invalid_client_metadata');
  const bad = await alice.browser.post('/register', {
    redirect_uris: ['https://team.example/cb'],
    access: { humans: true, orgs: [{ slug: 'acme', teams: 'eng' }] },
  });
  t.equal(bad.json().error, 'invalid_client_metadata');
});
