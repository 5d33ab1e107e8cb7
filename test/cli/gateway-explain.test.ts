import t from 'tap';
import { ADMIN, registerClient } from '../helpers/oidc.js';
import { buildSignedIn } from '../helpers/signed-in.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { codeBlocksUnder } from '../helpers/doc-blocks.js';
import { docCommand } from '../helpers/doc-examples.js';

// `keyplane gateway explain` against a control plane on a free port (docs/gateway.md#explaining-a-decision).
t.setTimeout(300_000);

const built = await buildSignedIn(t, { config: { adminToken: ADMIN } });
const { browser } = await built.signIn({ username: 'ada' });
await built.signIn({ username: 'eve' });
await built.app.listen({ port: 0, host: '127.0.0.1' });
const url = `http://127.0.0.1:${(built.app.server.address() as { port: number }).port}`;
const env = { KEYPLANE_ADMIN_TOKEN: ADMIN };
const created = await browser.post('/auth/orgs/create', { name: 'Acme' });
if (created.statusCode !== 200) throw new Error(`create org: ${created.body}`);
const gateway = await registerClient(built.app, {
  redirect_uris: ['https://wiki.example.com/_gate/callback'],
  gateway: {
    mode: 'enforce',
    routes: [
      { path: '/', allow: { orgs: [{ slug: 'acme' }] } },
      { path: '/admin', allow: { orgs: [{ slug: 'acme', roles: ['admin'] }], users: ['Eve'] } },
      { path: '/public', public: true },
    ],
  },
});
const explain = (user: string, path: string, extra: string[] = []) =>
  runInProcess(
    [
      'gateway',
      'explain',
      '--control-plane',
      url,
      '--client-id',
      gateway.client_id,
      '--user',
      user,
      '--path',
      path,
      ...extra,
    ],
    env,
  );

t.test('says allow and the deciding rule for a member, deny for a stranger', async (t) => {
  const member = await explain('ada', '/wiki/page');
  t.equal(member.code, 0, member.stderr);
  t.match(member.stdout, /^ALLOW: allowed by orgs: owner of acme\n/);
  t.match(member.stdout, /route \/ admits members of the org acme/);

  const stranger = await explain('eve', '/wiki/page');
  t.equal(stranger.code, 0, stranger.stderr);
  t.match(stranger.stdout, /^DENY: denied: no allow rule matches\n/);

  const named = await explain('eve', '/admin/users', ['--json']);
  t.match(JSON.parse(named.stdout), {
    ok: true,
    decision: 'allow',
    because: 'allowed by users: Eve',
    username: 'eve',
    route: { path: '/admin', rules: ['the accounts Eve', 'admins of the org acme'] },
  });
  const ownerNotAdmin = await explain('ada', '/admin/users');
  t.match(ownerNotAdmin.stdout, /^DENY/, 'roles are exact: an owner is not an admin');
  t.match((await explain('eve', '/public/x')).stdout, /^ALLOW: allowed: the route is public/);
});

t.test('keyplane gateway rules prints who passes each route, in words', async (t) => {
  const args = ['gateway', 'rules', '--control-plane', url, '--client-id', gateway.client_id];
  const text = await runInProcess(args, env);
  t.equal(text.code, 0, text.stderr);
  t.equal(
    text.stdout,
    [
      'sign-in: any account',
      '/: members of the org acme',
      '/admin: the accounts Eve; or admins of the org acme',
      '/public: anyone (public)',
      '',
    ].join('\n'),
  );
  const json = await runInProcess([...args, '--json'], env);
  t.match(JSON.parse(json.stdout), {
    ok: true,
    clientId: gateway.client_id,
    signIn: null,
    routes: [
      { path: '/', rules: ['members of the org acme'] },
      { path: '/admin', rules: ['the accounts Eve', 'admins of the org acme'] },
      { path: '/public', rules: ['anyone (public)'] },
    ],
  });
  const unknown = await runInProcess(['gateway', 'rules', '--control-plane', url, '--client-id', 'nope'], env);
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /not_found/);
  const noToken = await built.app.inject({ method: 'GET', url: `/admin/gateways/${gateway.client_id}/rules` });
  t.equal(noToken.statusCode, 401, 'the admin API needs the admin token');
});

t.test('the commands as docs/cli.md and docs/gateway.md write them exit 0 with their answer', async (t) => {
  const values = { URL: url, ID: gateway.client_id };
  const question = { ...values, NAME: 'eve', '/x': '/admin/users' };
  for (const command of [
    docCommand(
      'docs/cli.md',
      'keyplane gateway explain --control-plane URL --client-id ID --user NAME --path /x [--json]',
      question,
    ),
    docCommand(
      'docs/gateway.md',
      'keyplane gateway explain --control-plane URL --client-id ID --user NAME --path /x',
      question,
    ),
  ]) {
    const answer = await runInProcess(command.args, env);
    t.equal(answer.code, 0, `${command.shell}: ${answer.stderr}`);
    t.match(answer.stdout, /allowed by users: Eve/);
  }
  const rules = await runInProcess(
    docCommand('docs/gateway.md', 'keyplane gateway rules --control-plane URL --client-id ID', values).args,
    env,
  );
  t.equal(rules.code, 0, rules.stderr);
  // The page shows this gateway's rules: its block is the command's real output.
  t.equal(rules.stdout, codeBlocksUnder('docs/gateway.md', 'Seeing the rules')[0]!.text);
  const json = await runInProcess(
    docCommand('docs/cli.md', 'keyplane gateway rules --control-plane URL --client-id ID [--json]', values).args,
    env,
  );
  t.equal(json.code, 0, json.stderr);
  t.match(JSON.parse(json.stdout), { ok: true, clientId: gateway.client_id });
});

t.test('refusals: an unknown account or client exits 1, missing flags exit 2', async (t) => {
  const unknown = await explain('nobody', '/');
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /not_found/);
  const usage = await runInProcess(['gateway', 'explain', '--control-plane', url, '--user', 'ada'], env);
  t.equal(usage.code, 2);
  t.match(usage.stderr, /--client-id, --user and --path are required/);
});

t.test('names the team that admitted an account, or the one it is missing', async (t) => {
  t.equal((await browser.post('/org/acme/teams', { name: 'eng' })).statusCode, 201);
  const ada = (await built.services.storage.identities.findByUsername('ada'))!;
  t.equal((await browser.request('PUT', `/org/acme/teams/eng/members/${ada.identityId}`, {})).statusCode, 200);
  const teamGateway = await registerClient(built.app, {
    redirect_uris: ['https://eng.example.com/_gate/callback'],
    gateway: {
      mode: 'enforce',
      routes: [
        { path: '/', allow: { groups: ['acme/eng'] } },
        { path: '/ops', allow: { orgs: [{ slug: 'acme', teams: ['ops'] }] } },
      ],
    },
  });
  const run = (path: string) =>
    runInProcess(
      [
        'gateway',
        'explain',
        '--control-plane',
        url,
        '--client-id',
        teamGateway.client_id,
        '--user',
        'ada',
        '--path',
        path,
      ],
      env,
    );
  const admitted = await run('/docs');
  t.equal(admitted.code, 0, admitted.stderr);
  t.match(admitted.stdout, /^ALLOW: allowed by groups: a member of the team acme\/eng\n/);
  t.match(admitted.stdout, /route \/ admits members of the team acme\/eng/);
  const missing = await run('/ops/x');
  t.match(missing.stdout, /^DENY: denied: no allow rule matches \(not a member of the team acme\/ops\)\n/);
});
