import { readFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import SCIMMY from 'scimmy';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { manualClock } from '../../helpers/build.js';

const FIXTURES = new URL('../../fixtures/scim/', import.meta.url);
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';

interface Step {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  body?: unknown;
  status: number;
  expect?: Record<string, unknown>;
  absent?: string[];
  types?: Record<string, 'number' | 'array'>;
  capture?: Record<string, string>;
}

async function setUp(t: Test, config: Record<string, unknown> = {}) {
  const clock = manualClock();
  const built = await buildSignedIn(t, {
    now: clock.now,
    areas: ['orgs', 'scim', 'account'],
    config: { adminToken: 'test-admin-token-0123456789abcdef', ...config },
  });
  const owner = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  for (const name of ['Acme', 'Rival'])
    t.equal((await owner.browser.post('/auth/orgs/create', { name })).statusCode, 200);
  const newToken = async (slug = 'acme') => {
    const res = await owner.browser.post(`/org/${slug}/scim-tokens`);
    t.equal(res.statusCode, 200, res.body);
    return res.json() as { tokenId: string; token: string };
  };
  const { token, tokenId } = await newToken();
  const scim = async (method: Step['method'], path: string, body?: unknown, bearer = token, slug = 'acme') =>
    built.app.inject({
      method,
      url: `/scim/v2/orgs/${slug}${path}`,
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const createUser = async (userName: string, more: Record<string, unknown> = {}) => {
    const res = await scim('POST', '/Users', { schemas: [USER], userName, ...more });
    t.equal(res.statusCode, 201, res.body);
    return res.json() as { id: string } & Record<string, unknown>;
  };
  return { ...built, clock, owner, token, tokenId, newToken, scim, createUser };
}

SCIMMY.Resources.declare(SCIMMY.Resources.User).extend(SCIMMY.Schemas.EnterpriseUser, false);
SCIMMY.Resources.declare(SCIMMY.Resources.Group);

/**
 * Reads an answer as SCIMMY (a SCIM library built on the RFCs' schema definitions) reads it: a
 * User or Group must coerce under its schema (types, multi-valued attributes, sub-attributes), a
 * list must be a ListResponse. It throws on what it cannot read.
 */
function readWithScimmy(body: Record<string, unknown>): void {
  const schemas = body.schemas as string[];
  if (schemas.includes('urn:ietf:params:scim:api:messages:2.0:ListResponse')) {
    const list = new SCIMMY.Messages.ListResponse(body as never);
    for (const resource of (body.Resources as Record<string, unknown>[]) ?? []) readWithScimmy(resource);
    if (list.totalResults !== body.totalResults) throw new Error('totalResults read differently');
  } else if (schemas.includes(USER)) new SCIMMY.Schemas.User(body, 'in');
  else if (schemas.includes('urn:ietf:params:scim:schemas:core:2.0:Group')) new SCIMMY.Schemas.Group(body, 'in');
}

/** Replays a recorded sequence: `{{name}}` in paths and bodies is a value captured from an earlier answer. */
async function replay(t: Test, file: string) {
  const { steps } = JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')) as { steps: Step[] };
  const { scim } = await setUp(t);
  const vars = new Map<string, string>();
  const fill = <T>(value: T): T =>
    JSON.parse(
      JSON.stringify(value).replace(/\{\{(\w+)\}\}/g, (_, name: string) => vars.get(name) ?? `{{${name}}}`),
    ) as T;
  for (const step of steps) {
    const res = await scim(step.method, fill(step.path), step.body === undefined ? undefined : fill(step.body));
    t.equal(res.statusCode, step.status, `${step.name}: ${res.body}`);
    if (step.status === 204) {
      t.equal(res.body, '', `${step.name}: no content`);
      continue;
    }
    t.match(res.headers['content-type'], /^application\/scim\+json/, `${step.name}: media type`);
    const body = res.json() as Record<string, unknown>;
    if (step.expect) t.match(body, fill(step.expect), step.name);
    if (res.statusCode < 300) t.doesNotThrow(() => readWithScimmy(body), `${step.name}: SCIMMY reads the answer`);
    for (const name of step.absent ?? []) t.notOk(name in body, `${step.name}: no ${name}`);
    for (const [name, type] of Object.entries(step.types ?? {}))
      t.ok(
        type === 'array' ? Array.isArray(body[name]) : typeof body[name] === type,
        `${step.name}: ${name} is a ${type}`,
      );
    for (const [name, attribute] of Object.entries(step.capture ?? {})) vars.set(name, String(body[attribute]));
  }
}

t.test("replays Microsoft Entra ID's documented request sequence", (t) => replay(t, 'entra-id.json'));
t.test("replays Okta's SCIM 2.0 test sequence", (t) => replay(t, 'okta.json'));

t.test('discovery endpoints describe Users with the enterprise extension, Groups, and what is supported', async (t) => {
  const { scim } = await setUp(t);
  const spc = await scim('GET', '/ServiceProviderConfig');
  t.equal(spc.statusCode, 200);
  t.match(spc.headers['content-type'], /^application\/scim\+json/);
  t.match(spc.json(), { patch: { supported: true }, filter: { supported: true }, bulk: { supported: false } });
  const types = (await scim('GET', '/ResourceTypes')).json();
  t.same(
    types.Resources.map((r: { id: string }) => r.id),
    ['User', 'Group'],
  );
  t.match(types.Resources[0], {
    endpoint: '/Users',
    schemaExtensions: [{ schema: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User' }],
  });
  const schemas = (await scim('GET', '/Schemas')).json();
  t.equal(schemas.totalResults, 3);
});

t.test('filters follow the grammar with its precedence, on the attributes directories use', async (t) => {
  const { scim, createUser, clock } = await setUp(t);
  const ann = await createUser('ann@acme.example', {
    externalId: 'ext-ann',
    displayName: 'Ann Smith',
    emails: [
      { type: 'work', value: 'ann@acme.example' },
      { type: 'home', value: 'ann@home.example' },
    ],
  });
  clock.advance(60_000);
  const bob = await createUser('bob@acme.example', {
    externalId: 'ext-bob',
    displayName: 'Bob Jones',
    emails: [{ type: 'home', value: 'bob@acme.example' }],
  });
  clock.advance(60_000);
  const cy = await createUser('cy@other.example', { displayName: 'Cy Smith' });
  const ids = async (filter: string) => {
    const res = await scim('GET', `/Users?filter=${encodeURIComponent(filter)}`);
    t.equal(res.statusCode, 200, `${filter}: ${res.body}`);
    return (res.json().Resources as Array<{ id: string }>).map((r) => r.id).sort();
  };
  const sorted = (...list: Array<{ id: string }>) => list.map((u) => u.id).sort();
  t.same(await ids('userName eq "ANN@acme.example"'), sorted(ann), 'userName ignores case');
  t.same(await ids('externalId eq "ext-bob"'), sorted(bob));
  t.same(await ids('externalId eq "EXT-BOB"'), [], 'externalId is case-exact');
  t.same(await ids('userName ne "ann@acme.example"'), sorted(bob, cy));
  t.same(await ids('displayName co "smith"'), sorted(ann, cy));
  t.same(await ids('userName sw "b"'), sorted(bob));
  t.same(await ids('userName ew "other.example"'), sorted(cy));
  t.same(await ids('externalId pr'), sorted(ann, bob));
  t.same(await ids('emails.value eq "ann@home.example"'), sorted(ann));
  t.same(await ids('emails[type eq "work"].value eq "ann@acme.example"'), sorted(ann));
  t.same(await ids('emails[type eq "work"].value eq "bob@acme.example"'), [], 'the work address, not any');
  t.same(await ids('emails[type eq "home" and value ew "acme.example"]'), sorted(bob));
  t.same(await ids('meta.lastModified gt "2026-11-22T12:00:30Z"'), sorted(bob, cy));
  t.same(await ids('meta.lastModified ge "2026-11-22T12:01:00Z"'), sorted(bob, cy));
  t.same(await ids('meta.lastModified lt "2026-11-22T12:01:00Z"'), sorted(ann));
  t.same(await ids('meta.lastModified le "2026-11-22T12:01:00Z"'), sorted(ann, bob));
  // `and` binds tighter than `or`; parentheses change that.
  t.same(await ids('userName sw "a" or userName sw "b" and displayName co "smith"'), sorted(ann));
  t.same(await ids('(userName sw "a" or userName sw "b") and displayName co "jones"'), sorted(bob));
  t.same(await ids('not (displayName co "smith")'), sorted(bob));
  t.same(await ids('not (displayName co "smith") or userName sw "c"'), sorted(bob, cy));
});

t.test('lists page by startIndex and count, and answer only the attributes asked for', async (t) => {
  const { scim, createUser, clock } = await setUp(t);
  for (const name of ['a1', 'a2', 'a3', 'a4', 'a5']) {
    await createUser(`${name}@acme.example`, { displayName: name });
    clock.advance(1000);
  }
  const page = (await scim('GET', '/Users?startIndex=2&count=2')).json();
  t.match(page, { totalResults: 5, startIndex: 2, itemsPerPage: 2 });
  t.same(
    page.Resources.map((r: { userName: string }) => r.userName),
    ['a2@acme.example', 'a3@acme.example'],
  );
  t.match((await scim('GET', '/Users?startIndex=5&count=10')).json(), { itemsPerPage: 1 });
  t.match((await scim('GET', '/Users?count=0')).json(), { totalResults: 5, itemsPerPage: 0, Resources: [] });
  const some = (await scim('GET', '/Users?attributes=userName&count=1')).json().Resources[0];
  t.same(Object.keys(some).sort(), ['id', 'schemas', 'userName']);
  const fewer = (await scim('GET', '/Users?excludedAttributes=meta,displayName&count=1')).json().Resources[0];
  t.notOk('meta' in fewer);
  t.notOk('displayName' in fewer);
  t.ok('userName' in fewer);
});

t.test('every refusal answers the SCIM error schema with its status and scimType', async (t) => {
  const { scim, createUser, newToken, tokenId, owner, token } = await setUp(t, { 'scim.perTokenPerMinute': 30 });
  const error = async (res: Awaited<ReturnType<typeof scim>>, status: number, scimType?: string) => {
    t.equal(res.statusCode, status, res.body);
    t.match(res.headers['content-type'], /^application\/scim\+json/);
    t.match(res.json(), {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: String(status),
      ...(scimType ? { scimType } : {}),
    });
  };
  await error(await scim('GET', '/Users', undefined, 'kpscim_nonsense'), 401);
  await error(
    await scim(
      'GET',
      '/Users',
      undefined,
      token.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
    ),
    401,
  );
  // A token reaches its own org only.
  const rival = await newToken('rival');
  await error(await scim('GET', '/Users', undefined, rival.token), 401);
  t.equal((await scim('GET', '/Users', undefined, rival.token, 'rival')).statusCode, 200);
  await error(await scim('GET', '/Users', undefined, token, 'nope'), 401);

  await error(await scim('GET', '/Users?filter=userName%20eq'), 400, 'invalidFilter');
  await error(await scim('GET', `/Users?filter=${encodeURIComponent('password eq "x"')}`), 400, 'invalidFilter');
  await error(await scim('GET', `/Users?filter=${encodeURIComponent('active gt true')}`), 400, 'invalidFilter');
  const ann = await createUser('ann@acme.example');
  await error(await scim('POST', '/Users', { schemas: [USER], userName: 'ANN@acme.example' }), 409, 'uniqueness');
  await error(await scim('POST', '/Users', { schemas: [USER] }), 400, 'invalidValue');
  await error(await scim('POST', '/Users', { schemas: [USER], userName: 'x', active: 'maybe' }), 400, 'invalidValue');
  await error(await scim('GET', '/Users/usr_unknown'), 404);
  await error(
    await scim('PATCH', '/Users/usr_unknown', { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'title' }] }),
    404,
  );
  await error(await scim('DELETE', '/Groups/team_unknown'), 404);
  await error(await scim('PATCH', `/Users/${ann.id}`, { Operations: [] }), 400, 'invalidSyntax');
  await error(
    await scim('PATCH', `/Users/${ann.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'move', path: 'title' }] }),
    400,
    'invalidSyntax',
  );
  await error(
    await scim('PATCH', `/Users/${ann.id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'nope', value: 1 }],
    }),
    400,
    'invalidPath',
  );
  await error(
    await scim('PATCH', `/Users/${ann.id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'id', value: 'x' }],
    }),
    400,
    'mutability',
  );
  await error(
    await scim('PATCH', `/Users/${ann.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove' }] }),
    400,
    'noTarget',
  );
  const bob = await createUser('bob@acme.example');
  await error(
    await scim('PATCH', `/Users/${bob.id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'userName', value: 'Ann@acme.example' }],
    }),
    409,
    'uniqueness',
  );
  // A group takes only accounts the org manages: a personal member is never taken over.
  await error(
    await scim('POST', '/Groups', { displayName: 'Eng', members: [{ value: owner.identityId }] }),
    400,
    'invalidValue',
  );
  t.equal((await scim('POST', '/Groups', { displayName: 'Eng' })).statusCode, 201);
  await error(await scim('POST', '/Groups', { displayName: 'Eng' }), 409, 'uniqueness');

  // Revoked: the next call is refused.
  const list = (await owner.browser.get('/org/acme/scim-tokens')).json();
  t.match(list.tokens, [{ tokenId, revokedAt: null, lastUsedAt: /^2026-/ }, { revokedAt: null }].slice(0, 1));
  t.notOk(JSON.stringify(list).includes(token.split('.')[1]!), 'no secret is listed');
  t.equal((await owner.browser.request('DELETE', `/org/acme/scim-tokens/${tokenId}`)).statusCode, 200);
  await error(await scim('GET', '/Users'), 401);
  t.equal((await owner.browser.request('DELETE', `/org/acme/scim-tokens/${tokenId}`)).json().reason, 'not_found');

  // Throttled per token: another token of the org still works.
  const fresh = await newToken();
  let last = await scim('GET', '/ServiceProviderConfig', undefined, fresh.token);
  for (let i = 0; i < 30 && last.statusCode === 200; i++)
    last = await scim('GET', '/ServiceProviderConfig', undefined, fresh.token);
  await error(last, 429);
  t.ok(Number(last.headers['retry-after']) >= 1);
  const other = await newToken();
  t.equal((await scim('GET', '/ServiceProviderConfig', undefined, other.token)).statusCode, 200);
});

t.test('only an owner at sensitive creates, lists and revokes SCIM tokens', async (t) => {
  const { signIn, owner } = await setUp(t);
  const plain = await signIn({ username: 'olivia', assurance: 'passkey' });
  for (const [method, url] of [
    ['POST', '/org/acme/scim-tokens'],
    ['GET', '/org/acme/scim-tokens'],
    ['DELETE', '/org/acme/scim-tokens/sct_x'],
  ] as const) {
    const res = await plain.browser.request(method, url);
    t.equal(res.statusCode, 403, `${method} ${url}`);
    t.equal(res.json().reason, 'insufficient_assurance');
  }
  const admin = await signIn({ username: 'adam', assurance: 'sensitive' });
  t.equal((await owner.browser.post('/org/acme/members/invite', { username: 'adam', role: 'admin' })).statusCode, 200);
  t.equal((await admin.browser.post('/org/acme/members/accept')).statusCode, 200);
  t.equal((await admin.browser.post('/org/acme/scim-tokens')).json().reason, 'forbidden');
});
