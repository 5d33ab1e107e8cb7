import t from 'tap';
import { ADMIN } from '../helpers/oidc.js';
import { buildSignedIn } from '../helpers/signed-in.js';
import { runCli } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { accountsCommand } from '../../cli/src/commands/accounts.js';
import { CliError } from '../../cli/src/exit.js';

// One control plane for the file. A few runs are real processes (exit code and streams as a shell
// sees them); the variations run in-process through the same program.
t.setTimeout(300_000);

const built = await buildSignedIn(t, { config: { adminToken: ADMIN } });
const { identityId, browser } = await built.signIn({ username: 'ada' });
await built.app.listen({ port: 0, host: '127.0.0.1' });
const url = `http://127.0.0.1:${(built.app.server.address() as { port: number }).port}`;
const { services } = built;
const env = { KEYPLANE_ADMIN_TOKEN: ADMIN };

t.test('keyplane accounts show, disable, enable and delete an account by username or identity id', async (t) => {
  const show = await runCli(['accounts', 'show', 'ada', '--control-plane', url], env);
  t.equal(show.code, 0, show.stderr);
  t.equal(show.stdout, `ada (${identityId}): active\n`);
  t.match(show.stderr, `looking up ada at ${url}`);

  const disable = await runInProcess(['accounts', 'disable', identityId, '--control-plane', url], env);
  t.equal(disable.code, 0, disable.stderr);
  t.match(disable.stdout, new RegExp(`^ada \\(${identityId}\\): disabled, receipt [0-9a-f]{64}\\n$`));
  t.match(disable.stderr, `disabling ada (${identityId})`);
  t.equal((await browser.get('/account?format=json')).statusCode, 401, "the account's session ended");
  const again = await runInProcess(['accounts', 'disable', 'ada', '--control-plane', url], env);
  t.equal(again.stdout, `ada (${identityId}): disabled (unchanged)\n`);

  const enable = await runInProcess(['accounts', 'enable', 'ada', '--control-plane', url, '--json'], env);
  t.equal(enable.code, 0);
  t.match(JSON.parse(enable.stdout), {
    ok: true,
    identityId,
    username: 'ada',
    state: 'active',
    receipt: /^[0-9a-f]{64}$/,
  });

  const shown = await runInProcess(['accounts', 'show', identityId, '--control-plane', url, '--json'], env);
  t.same(JSON.parse(shown.stdout), { ok: true, identityId, username: 'ada', state: 'active', managedBy: null });

  const deleted = await runInProcess(['accounts', 'delete', 'ada', '--control-plane', url], env);
  t.equal(deleted.code, 0, deleted.stderr);
  t.match(deleted.stdout, new RegExp(`^deleted ada \\(${identityId}\\), receipt [0-9a-f]{64}\\n$`));
  t.equal(await services.storage.identities.get(identityId), null);
});

t.test('keyplane accounts exits 1 when the server refuses and 2 when used wrongly', async (t) => {
  const unknownJson = await runCli(['accounts', 'delete', 'nobody', '--control-plane', url, '--json'], env);
  t.equal(unknownJson.code, 1);
  t.match(JSON.parse(unknownJson.stdout), { ok: false, reason: 'not_found' });
  t.match(unknownJson.stderr, /cannot look up nobody: not_found/);
  await built.signIn({ username: 'opal', console: 'operator' });
  const lastOperator = await runInProcess(['accounts', 'delete', 'opal', '--control-plane', url, '--json'], env);
  t.equal(lastOperator.code, 1, 'the only operator is not deleted');
  t.match(JSON.parse(lastOperator.stdout), { ok: false, reason: 'last_operator' });
  const noToken = await runCli(['accounts', 'show', 'ada', '--control-plane', url], { KEYPLANE_ADMIN_TOKEN: '' });
  t.equal(noToken.code, 2);
  t.match(noToken.stderr, /KEYPLANE_ADMIN_TOKEN/);

  // The rest in-process: the same command function, the same exit codes.
  const saved = process.env['KEYPLANE_ADMIN_TOKEN'];
  t.teardown(() => {
    if (saved === undefined) delete process.env['KEYPLANE_ADMIN_TOKEN'];
    else process.env['KEYPLANE_ADMIN_TOKEN'] = saved;
  });
  const exitOf = async (action: 'show' | 'disable', ref: string, options: { controlPlane?: string }) => {
    try {
      await accountsCommand(action, ref, options);
      return 0;
    } catch (error) {
      return error instanceof CliError ? error.exitCode : -1;
    }
  };
  process.env['KEYPLANE_ADMIN_TOKEN'] = 'x'.repeat(40);
  t.equal(await exitOf('disable', 'ada', { controlPlane: url }), 1, 'a wrong token is refused');
  process.env['KEYPLANE_ADMIN_TOKEN'] = ADMIN;
  t.equal(await exitOf('show', 'ada', {}), 2, 'no --control-plane');
  t.equal(await exitOf('show', 'ada', { controlPlane: 'not a url' }), 2);
  t.equal(await exitOf('show', 'ada', { controlPlane: 'ftp://x' }), 2);
  t.equal(await exitOf('show', ' ', { controlPlane: url }), 2);
  t.equal(await exitOf('show', 'ada', { controlPlane: 'http://127.0.0.1:1' }), 2, 'unreachable');
  t.equal(await exitOf('show', 'ada', { controlPlane: `${url}/healthz` }), 1, 'a server that is not the admin API');
});
