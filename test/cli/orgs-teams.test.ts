import t from 'tap';
import { ADMIN } from '../helpers/oidc.js';
import { buildSignedIn } from '../helpers/signed-in.js';
import { runInProcess } from '../helpers/cli-in-process.js';

// `keyplane orgs teams …` against a control plane on a free port (docs/cli.md, docs/orgs.md#teams).
t.setTimeout(300_000);

const built = await buildSignedIn(t, { config: { adminToken: ADMIN } });
const ada = await built.signIn({ username: 'ada' });
await built.signIn({ username: 'eve' });
await built.app.listen({ port: 0, host: '127.0.0.1' });
const url = `http://127.0.0.1:${(built.app.server.address() as { port: number }).port}`;
const env = { KEYPLANE_ADMIN_TOKEN: ADMIN };
const created = await ada.browser.post('/auth/orgs/create', { name: 'Acme' });
if (created.statusCode !== 200) throw new Error(`create org: ${created.body}`);
const teams = (...args: string[]) => runInProcess(['orgs', 'teams', ...args, '--control-plane', url], env);
const actorOf = async (hash: string) => {
  const stored = await built.app.kp.storage.receipts.get(hash);
  return (JSON.parse(stored!.body) as { actor: unknown }).actor;
};
const receiptIn = (text: string) => /receipt ([0-9a-f]{64})/.exec(text)?.[1] ?? '';

t.test('creates, renames, fills, lists and deletes a team as the operator', async (t) => {
  const made = await teams('create', 'acme', 'eng', '--display-name', 'Engineering');
  t.equal(made.code, 0, made.stderr);
  t.match(made.stdout, /^created acme\/eng "Engineering", receipt [0-9a-f]{64}\n$/);
  t.match(made.stderr, /creating the team acme\/eng at http/, 'progress on stderr');
  t.same(await actorOf(receiptIn(made.stdout)), { type: 'admin_token' }, 'the receipt names the admin token');

  const renamed = await teams('rename', 'acme', 'eng', 'Platform');
  t.equal(renamed.code, 0, renamed.stderr);
  t.match(renamed.stdout, /^acme\/eng is "Platform", receipt [0-9a-f]{64}\n$/);
  t.match((await teams('rename', 'acme', 'eng', 'Platform')).stdout, /^acme\/eng is "Platform" \(unchanged\)\n$/);

  const added = await teams('add-member', 'acme', 'eng', 'ada');
  t.equal(added.code, 0, added.stderr);
  t.equal(added.stdout, `ada (${ada.identityId}) is in acme/eng, receipt ${receiptIn(added.stdout)}\n`);
  t.same(await actorOf(receiptIn(added.stdout)), { type: 'admin_token' });
  t.match((await teams('add-member', 'acme', 'eng', ada.identityId)).stdout, /is in acme\/eng \(unchanged\)/);

  const list = await teams('list', 'acme');
  t.equal(list.code, 0, list.stderr);
  t.equal(list.stdout, `eng "Platform" 1 member(s) ${ada.identityId}\n`);
  t.match(list.stderr, /1 team\(s\)/);
  const seen = await ada.browser.get('/org/acme/teams');
  t.match(seen.json(), { teams: [{ name: 'eng', displayName: 'Platform', members: [ada.identityId] }] });
  const json = await teams('list', 'acme', '--json');
  t.match(JSON.parse(json.stdout), { ok: true, teams: [{ name: 'eng', members: [ada.identityId] }] });

  const removed = await teams('remove-member', 'acme', 'eng', 'ada');
  t.equal(removed.code, 0, removed.stderr);
  t.match(removed.stdout, /^ada \(usr_[^)]+\) left acme\/eng, receipt [0-9a-f]{64}\n$/);

  const deleted = await teams('delete', 'acme', 'eng', '--json');
  t.equal(deleted.code, 0, deleted.stderr);
  t.match(JSON.parse(deleted.stdout), { ok: true, receipt: /^[0-9a-f]{64}$/ });
  t.equal((await teams('list', 'acme')).stdout, '', 'no team left');
});

t.test('refusals exit 1 with the reason', async (t) => {
  t.equal((await teams('create', 'acme', 'ops')).code, 0);
  const taken = await teams('create', 'acme', 'ops', '--json');
  t.equal(taken.code, 1);
  t.match(JSON.parse(taken.stdout), { ok: false, reason: 'conflict' });
  const badName = await teams('create', 'acme', 'Not A Slug');
  t.equal(badName.code, 1);
  t.match(badName.stderr, /cannot create acme\/Not A Slug: invalid_request/);
  const stranger = await teams('add-member', 'acme', 'ops', 'eve');
  t.equal(stranger.code, 1, 'only members of the org join its teams');
  t.match(stranger.stderr, /not_found/);
  const notIn = await teams('remove-member', 'acme', 'ops', 'ada');
  t.equal(notIn.code, 1);
  t.match(notIn.stderr, /not_found \(that account is not a member of the team\)/);
  t.match((await teams('add-member', 'acme', 'ops', 'nobody')).stderr, /cannot look up nobody: not_found/);
  t.match((await teams('delete', 'acme', 'nope')).stderr, /not_found/);
  const noOrg = await teams('list', 'nope');
  t.equal(noOrg.code, 1);
  t.match(noOrg.stderr, /cannot list the teams of nope: not_found/);
  const wrongToken = await runInProcess(['orgs', 'teams', 'list', 'acme', '--control-plane', url], {
    KEYPLANE_ADMIN_TOKEN: 'not-the-token',
  });
  t.equal(wrongToken.code, 1);
  t.match(wrongToken.stderr, /unauthorized/);
});

t.test('usage errors exit 2', async (t) => {
  const noToken = await runInProcess(['orgs', 'teams', 'list', 'acme', '--control-plane', url], {
    KEYPLANE_ADMIN_TOKEN: '',
  });
  t.equal(noToken.code, 2);
  t.match(noToken.stderr, /KEYPLANE_ADMIN_TOKEN/);
  t.equal((await teams('rename', 'acme', 'ops')).code, 2, 'a missing argument');
  t.equal((await runInProcess(['orgs', 'teams', 'list', 'acme'], env)).code, 2, 'no --control-plane');
  const down = await runInProcess(['orgs', 'teams', 'list', 'acme', '--control-plane', 'http://127.0.0.1:9'], env);
  t.equal(down.code, 2);
  t.match(down.stderr, /cannot reach/);
});

t.test('the admin token reaches only the JSON calls; the page forms stay session-only', async (t) => {
  const form = await built.app.inject({
    method: 'POST',
    url: '/org/acme/teams/ops/rename',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'displayName=Operations',
  });
  t.equal(form.statusCode, 401, 'a form post needs a session');
  const dashboard = await built.app.inject({
    method: 'GET',
    url: '/org/acme?format=json',
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  t.equal(dashboard.statusCode, 401, 'the org page is for its members');
});
