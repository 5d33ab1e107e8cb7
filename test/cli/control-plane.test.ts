import t from 'tap';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { runCli, startCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/build.js';

// Each command is a fresh Node process: about 100 s on a quiet 2-core machine, more under load.
t.setTimeout(300_000);

t.test('control-plane prints its URL, serves, and exits 0 on SIGTERM', async (t) => {
  const data = tempDir(t);
  const server = await startCli(['control-plane', '--port', '0', '--data', data], { KEYPLANE_MASTER_KEY: '' });
  t.teardown(() => server.stop('SIGKILL'));
  t.match(server.url, /^http:\/\/localhost:\d+$/, 'loopback becomes localhost');
  t.equal(server.stdout().trim(), `listening ${server.url}`, 'stdout carries exactly the listening line');
  const discovery = await request(`${server.url}/.well-known/openid-configuration`);
  t.equal(discovery.statusCode, 200);
  t.equal(((await discovery.body.json()) as { issuer: string }).issuer, server.url);
  t.match(server.stderr(), /KEYPLANE_MASTER_KEY is not set/, 'the dev key warning is visible');
  t.match(server.stderr(), new RegExp(`^No founder account yet\\. Create it within 24 hours at: ${server.url}/auth\\?setup=`, 'm'), 'the founder link is a plain line');
  t.equal(statSync(join(data, 'master.key')).mode & 0o777, 0o600);
  // Unlike `up`, the server command keeps JSON log lines for a log collector, one per request.
  const requestLogged = () => server.stderr().split('\n').filter((line) => line.startsWith('{'))
    .some((line) => (JSON.parse(line) as { req?: { url?: string } }).req?.url === '/.well-known/openid-configuration');
  for (let i = 0; i < 100 && !requestLogged(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  t.ok(requestLogged(), 'requests are logged as JSON lines');
  t.equal(await server.stop('SIGTERM'), 0);
});

t.test('an explicit issuer is the printed URL', async (t) => {
  const server = await startCli(['control-plane', '--port', '0', '--data', tempDir(t), '--issuer', 'https://id.example.test']);
  t.teardown(() => server.stop('SIGKILL'));
  t.equal(server.url, 'https://id.example.test');
  t.equal(await server.stop('SIGTERM'), 0);
});

t.test('an invalid configuration lists its problems and exits 2', async (t) => {
  const result = await runCli(['control-plane', '--port', 'abc', '--data', tempDir(t)], { KEYPLANE_ISSUER: 'not a url' });
  t.equal(result.code, 2);
  t.match(result.stderr, /port must be integer/);
  t.match(result.stderr, /issuer is not a valid URL/);
  t.equal(result.stdout, '');
});

t.test('usage errors exit 2, help exits 0', async (t) => {
  t.equal((await runCli(['control-plane', '--no-such-flag'])).code, 2);
  t.equal((await runCli(['no-such-command'])).code, 2);
  const help = await runCli(['control-plane', '--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /--issuer <url>/);
  t.match((await runCli(['--help'])).stdout, /control-plane/);
});

t.test('a taken port is a clear failure, exit 1', async (t) => {
  const data = tempDir(t);
  const first = await startCli(['control-plane', '--port', '0', '--data', data]);
  t.teardown(() => first.stop('SIGKILL'));
  const port = new URL(first.url).port;
  const second = await runCli(['control-plane', '--port', port, '--data', tempDir(t)]);
  t.equal(second.code, 1);
  t.match(second.stderr, /address in use/);
  await first.stop();
});

t.test('keys rotate and list; backup writes a copy', async (t) => {
  const data = tempDir(t);
  const before = await runCli(['keys', 'list', '--data', data], { KEYPLANE_MASTER_KEY: 'k'.repeat(40) });
  t.equal(before.code, 0);
  const [currentBefore] = before.stdout.split('\n').filter((l) => l.endsWith('current'));
  const rotated = await runCli(['keys', 'rotate', '--data', data], { KEYPLANE_MASTER_KEY: 'k'.repeat(40) });
  t.equal(rotated.code, 0, rotated.stderr);
  t.match(rotated.stdout, /^rotated: /);
  const after = await runCli(['keys', 'list', '--data', data], { KEYPLANE_MASTER_KEY: 'k'.repeat(40) });
  t.not(after.stdout.split('\n').find((l) => l.endsWith('current')), currentBefore);
  t.ok(after.stdout.includes(currentBefore!.split(' ')[0]!), 'the retired key is still listed');

  const out = join(tempDir(t), 'backup.db');
  const backup = await runCli(['backup', '--data', data, '--out', out]);
  t.equal(backup.code, 0, backup.stderr);
  t.ok(existsSync(out));
  t.equal((await runCli(['backup', '--data', data, '--out', out])).code, 2, 'refuses to overwrite');
  t.equal((await runCli(['backup', '--data', tempDir(t), '--out', join(tempDir(t), 'x.db')])).code, 2, 'refuses a dir without a database');
});
