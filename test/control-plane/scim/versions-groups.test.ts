import t, { type Test } from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { manualClock } from '../../helpers/build.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const WEAK_TAG = /^W\/"[A-Za-z0-9_-]{22}"$/;

async function setUp(t: Test) {
  const clock = manualClock();
  const built = await buildSignedIn(t, { now: clock.now, areas: ['orgs', 'scim'] });
  const owner = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  for (const name of ['Acme', 'Rival'])
    t.equal((await owner.browser.post('/auth/orgs/create', { name })).statusCode, 200);
  const tokenOf = async (slug: string) =>
    ((await owner.browser.post(`/org/${slug}/scim-tokens`)).json() as { token: string }).token;
  const tokens = { acme: await tokenOf('acme'), rival: await tokenOf('rival') };
  const scim = (
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    slug: 'acme' | 'rival' = 'acme',
  ) =>
    built.app.inject({
      method,
      url: `/scim/v2/orgs/${slug}${path}`,
      headers: {
        authorization: `Bearer ${tokens[slug]}`,
        ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const createUser = async (userName: string) => {
    const res = await scim('POST', '/Users', { schemas: [USER], userName });
    t.equal(res.statusCode, 201, res.body);
    return (res.json() as { id: string }).id;
  };
  return { ...built, clock, owner, scim, createUser };
}

t.test('Users and Groups carry versions: ETag answers, If-None-Match 304, If-Match 412 on a stale write', async (t) => {
  const { scim, createUser, clock } = await setUp(t);
  const spc = (await scim('GET', '/ServiceProviderConfig')).json();
  t.same(spc.etag, { supported: true });

  const made = await scim('POST', '/Users', { schemas: [USER], userName: 'ann@acme.example' });
  const user = made.json();
  t.match(user.meta.version, WEAK_TAG);
  t.equal(made.headers.etag, user.meta.version, 'POST answers the ETag');
  const read = await scim('GET', `/Users/${user.id}`);
  t.equal(read.headers.etag, user.meta.version);
  t.equal(read.json().meta.version, user.meta.version, 'the same resource, the same version');
  t.equal((await scim('GET', '/Users')).json().Resources[0].meta.version, user.meta.version, 'lists carry it too');

  const unchanged = await scim('GET', `/Users/${user.id}`, undefined, { 'if-none-match': user.meta.version });
  t.equal(unchanged.statusCode, 304);
  t.equal(unchanged.body, '');
  t.equal(unchanged.headers.etag, user.meta.version);

  clock.advance(1000);
  const patched = await scim(
    'PATCH',
    `/Users/${user.id}`,
    { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'Ann' }] },
    { 'if-match': user.meta.version },
  );
  t.equal(patched.statusCode, 200, patched.body);
  const v2 = patched.json().meta.version;
  t.not(v2, user.meta.version, 'a change makes a new version');
  t.equal(patched.headers.etag, v2);
  t.equal(
    (await scim('GET', `/Users/${user.id}`, undefined, { 'if-none-match': user.meta.version })).statusCode,
    200,
    'an old version is not the current one',
  );

  const stale = { 'if-match': user.meta.version };
  for (const [method, body] of [
    ['PATCH', { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'Bo' }] }],
    ['PUT', { schemas: [USER], userName: 'ann@acme.example', displayName: 'Bo' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await scim(method, `/Users/${user.id}`, body, stale);
    t.equal(res.statusCode, 412, `${method} with a stale If-Match`);
    t.match(res.json(), {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '412',
      reason: 'scim_precondition_failed',
    });
    t.match(res.headers['content-type'], /application\/scim\+json/);
  }
  t.equal((await scim('GET', `/Users/${user.id}`)).json().displayName, 'Ann', 'nothing changed');
  const put = await scim(
    'PUT',
    `/Users/${user.id}`,
    { schemas: [USER], userName: 'ann@acme.example', displayName: 'Ann Lee' },
    { 'if-match': `"${v2.slice(3, -1)}"` },
  );
  t.equal(put.statusCode, 200, 'a strong form of the same tag matches (weak comparison)');
  t.equal(put.headers.etag, put.json().meta.version);
  t.equal((await scim('DELETE', `/Users/${user.id}`, undefined, { 'if-match': '*' })).statusCode, 204);

  // Groups: a member added changes the version, though the team's own row did not change.
  const dee = await createUser('dee@acme.example');
  const group = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Eng' });
  const g1 = group.json().meta.version;
  t.match(g1, WEAK_TAG);
  t.equal(group.headers.etag, g1);
  const add = await scim(
    'PATCH',
    `/Groups/${group.json().id}`,
    { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: dee }] }] },
    { 'if-match': g1 },
  );
  t.equal(add.statusCode, 204, add.body);
  const g2 = add.headers.etag as string;
  t.match(g2, WEAK_TAG);
  t.not(g2, g1);
  t.equal((await scim('GET', `/Groups/${group.json().id}`)).json().meta.version, g2);
  const staleGroup = await scim(
    'PATCH',
    `/Groups/${group.json().id}`,
    { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'members' }] },
    { 'if-match': g1 },
  );
  t.equal(staleGroup.statusCode, 412);
  t.equal((await scim('GET', `/Groups/${group.json().id}`)).json().members.length, 1, 'the member stays');
  t.equal(
    (await scim('GET', `/Groups/${group.json().id}`, undefined, { 'if-none-match': `W/"other", ${g2}` })).statusCode,
    304,
    'a list of tags',
  );
  t.equal((await scim('DELETE', `/Groups/${group.json().id}`, undefined, { 'if-match': g1 })).statusCode, 412);
  t.equal((await scim('DELETE', `/Groups/${group.json().id}`, undefined, { 'if-match': g2 })).statusCode, 204);
});

t.test('a Group keeps its externalId, and `externalId eq` finds it in its own org only', async (t) => {
  const { scim, services, owner } = await setUp(t);
  const made = await scim('POST', '/Groups', {
    schemas: [GROUP],
    displayName: 'Sales',
    externalId: 'a1B2-entra-object-id',
  });
  t.equal(made.statusCode, 201, made.body);
  const { id } = made.json();
  t.equal(made.json().externalId, 'a1B2-entra-object-id');
  await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Support', externalId: 'other' });
  await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'No id' });
  await scim(
    'POST',
    '/Groups',
    { schemas: [GROUP], displayName: 'Sales', externalId: 'a1B2-entra-object-id' },
    {},
    'rival',
  );

  const find = (filter: string, slug: 'acme' | 'rival' = 'acme') =>
    scim('GET', `/Groups?filter=${encodeURIComponent(filter)}`, undefined, {}, slug);
  const found = (await find('externalId eq "a1B2-entra-object-id"')).json();
  t.equal(found.totalResults, 1);
  t.equal(found.Resources[0].id, id);
  t.equal((await find('externalId eq "A1B2-ENTRA-OBJECT-ID"')).json().totalResults, 0, 'case-exact');
  t.equal((await find('externalId pr')).json().totalResults, 2);
  t.equal((await find('externalId eq "a1B2-entra-object-id" and displayName eq "Nope"')).json().totalResults, 0);
  t.not((await find('externalId eq "a1B2-entra-object-id"', 'rival')).json().Resources[0].id, id, 'per org');

  const patched = await scim('PATCH', `/Groups/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'Replace', path: 'externalId', value: 'moved' }],
  });
  t.equal(patched.statusCode, 204, patched.body);
  t.equal((await find('externalId eq "moved"')).json().Resources[0].id, id);
  t.equal((await find('externalId eq "a1B2-entra-object-id"')).json().totalResults, 0);
  const put = await scim('PUT', `/Groups/${id}`, { schemas: [GROUP], displayName: 'Sales' });
  t.equal(put.statusCode, 200);
  t.notOk('externalId' in put.json(), 'a PUT without it clears it');
  t.equal((await find('externalId eq "moved"')).json().totalResults, 0);
  const bad = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Bad', externalId: 42 });
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().scimType, 'invalidValue');
  // Deleting the team (from the org page too) takes its externalId with it.
  await scim('PATCH', `/Groups/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'add', path: 'externalId', value: 'again' }],
  });
  const slug = (await services.storage.teams.byId((await services.storage.orgs.getBySlug('acme'))!.orgId, id))!.slug;
  t.equal((await owner.browser.request('DELETE', `/org/acme/teams/${slug}`)).statusCode, 200);
  t.equal((await find('externalId eq "again"')).json().totalResults, 0);
});

t.test('a Group of a few hundred members is written from the members named, and stays correct', async (t) => {
  const { scim, createUser, owner } = await setUp(t);
  const ids: string[] = [];
  for (let i = 0; i < 300; i++) ids.push(await createUser(`u${i}@acme.example`));
  const personal = owner.identityId;
  const started = performance.now();
  const made = await scim('POST', '/Groups', {
    schemas: [GROUP],
    displayName: 'Everyone',
    members: ids.slice(0, 250).map((value) => ({ value })),
  });
  t.equal(made.statusCode, 201, made.body);
  const { id } = made.json();
  t.equal(made.json().members.length, 250);
  const batch = await scim('PATCH', `/Groups/${id}`, {
    schemas: [PATCH_OP],
    Operations: [
      { op: 'Add', path: 'members', value: ids.slice(250).map((value) => ({ value })) },
      { op: 'Remove', path: 'members', value: ids.slice(0, 10).map((value) => ({ value })) },
    ],
  });
  t.equal(batch.statusCode, 204, batch.body);
  const elapsed = performance.now() - started;
  t.comment(`a 250-member create and a 60-member batched PATCH: ${elapsed.toFixed(0)} ms`);
  const members = (await scim('GET', `/Groups/${id}`)).json().members.map((m: { value: string }) => m.value);
  t.same(new Set(members), new Set(ids.slice(10)), 'exactly the members named');

  const foreign = await scim('PATCH', `/Groups/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'add', path: 'members', value: [{ value: ids[0] }, { value: personal }] }],
  });
  t.equal(foreign.statusCode, 400, 'a personal account is never taken over');
  t.equal(foreign.json().scimType, 'invalidValue');
  t.equal((await scim('GET', `/Groups/${id}`)).json().members.length, 290, 'and nothing changed');
});

t.test('`displayName eq` finds a Group whatever the case, and only that one', async (t) => {
  const { scim } = await setUp(t);
  for (const displayName of ['Engineering', 'Engineering Managers', 'Sales'])
    t.equal((await scim('POST', '/Groups', { schemas: [GROUP], displayName })).statusCode, 201);
  const found = await scim(
    'GET',
    `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "engineering"')}`,
  );
  t.equal(found.statusCode, 200, found.body);
  t.match(found.json(), { totalResults: 1, Resources: [{ displayName: 'Engineering' }] });
  t.notOk(found.json().Resources[0].members, 'members excluded');
  const both = await scim(
    'GET',
    `/Groups?filter=${encodeURIComponent('displayName eq "Sales" or displayName sw "Eng"')}`,
  );
  t.equal(both.json().totalResults, 3, 'other filters still read every team');
  const none = await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Support"')}`);
  t.equal(none.json().totalResults, 0);
});
