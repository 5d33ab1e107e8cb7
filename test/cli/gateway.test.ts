import t from 'tap';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { request } from 'undici';
import { CLI, startCli, startListening } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { tempDir } from '../helpers/build.js';

t.test('gateway prints its URL, fails closed without a config, and exits 0 on SIGTERM', async (t) => {
  const data = tempDir(t);
  const server = await startCli(['gateway', '--port', '0', '--upstream', 'http://127.0.0.1:9', '--client-id', 'gw'], {
    KEYPLANE_DATA_DIR: data,
    KEYPLANE_GATEWAY_CLIENT_SECRET: 's3cret',
  });
  t.teardown(() => server.stop('SIGKILL'));
  t.match(server.url, /^http:\/\/localhost:\d+$/, 'loopback becomes localhost');
  t.equal(server.stdout().trim(), `listening ${server.url}`, 'stdout carries exactly the listening line');
  t.equal((await request(`${server.url}/healthz`)).statusCode, 200);
  t.equal((await request(`${server.url}/readyz`)).statusCode, 503);
  const protectedPath = await request(`${server.url}/app`);
  t.equal(protectedPath.statusCode, 503);
  t.match(await protectedPath.body.json(), { reason: 'gateway_not_configured' });
  const jwks = (await (await request(`${server.url}/_gate/jwks`)).body.json()) as {
    keys: Array<{ kty: string; d?: string }>;
  };
  t.equal(jwks.keys[0]?.kty, 'EC');
  t.notOk(jwks.keys[0]?.d, 'public parts only');
  t.equal(statSync(join(data, 'gateway-signing-key.json')).mode & 0o777, 0o600);
  t.equal(statSync(join(data, 'gateway-cookie.key')).mode & 0o777, 0o600);
  t.notOk(server.stderr().includes('s3cret'), 'the secret is never logged');
  t.equal(await server.stop('SIGTERM'), 0);
});

t.test('an explicit public URL is the printed URL', async (t) => {
  const server = await startCli(
    ['gateway', '--port', '0', '--public-url', 'https://gate.example.test', '--client-id', 'gw'],
    { KEYPLANE_DATA_DIR: tempDir(t), KEYPLANE_GATEWAY_CLIENT_SECRET: 's3cret' },
  );
  t.teardown(() => server.stop('SIGKILL'));
  t.equal(server.url, 'https://gate.example.test');
  t.equal(await server.stop('SIGTERM'), 0);
});

t.test('an invalid configuration lists its problems and exits 2', async (t) => {
  const result = await runInProcess(['gateway', '--port', 'abc', '--upstream', 'ftp://x'], {
    KEYPLANE_DATA_DIR: tempDir(t),
  });
  t.equal(result.code, 2);
  t.match(result.stderr, /port must be integer/);
  t.match(result.stderr, /upstream is not a valid URL/);
  t.equal(result.stdout, '');
  const notAUrl = await runInProcess(['gateway', '--upstream', 'notaurl'], { KEYPLANE_DATA_DIR: tempDir(t) });
  t.equal(notAUrl.code, 2);
  t.equal(
    notAUrl.stderr,
    'keyplane: invalid configuration:\n  - upstream is not a valid URL for this key\n',
    'a value that breaks both the format and the pattern is named once',
  );
  const proxies = await runInProcess(['gateway', '--trusted-proxies', '10.0.0.0/99,nope'], {
    KEYPLANE_DATA_DIR: tempDir(t),
  });
  t.equal(proxies.code, 2);
  t.match(proxies.stderr, /trustedProxies\[0\] must be an IP address or CIDR range/);
  t.match(proxies.stderr, /trustedProxies\[1\]/);
  const help = await runInProcess(['gateway', '--help']);
  t.equal(help.code, 0);
  for (const flag of [
    '--config',
    '--host',
    '--port',
    '--public-url',
    '--control-plane',
    '--upstream',
    '--client-id',
    '--client-secret',
    '--trusted-proxies',
    '--redis',
    '--data',
  ])
    t.match(help.stdout, flag);
});

t.test('a gateway without its client id or secret refuses to start, naming both (issue #54 item 4)', async (t) => {
  const data = tempDir(t);
  const neither = await runInProcess(['gateway', '--port', '0', '--data', data]);
  t.equal(neither.code, 2);
  t.match(
    neither.stderr,
    /invalid configuration:\n {2}- clientId is not set.*--client-id\)\n {2}- clientSecret is not set/,
  );
  t.equal(neither.stdout, '', 'it never listened');
  const noSecret = await runInProcess(['gateway', '--port', '0', '--data', data, '--client-id', 'gw']);
  t.equal(noSecret.code, 2);
  t.match(noSecret.stderr, /clientSecret is not set: .*KEYPLANE_GATEWAY_CLIENT_SECRET/);
  t.notMatch(noSecret.stderr, /clientId is not set/);
  t.same(readdirSync(data), [], 'nothing was written to its state directory');
});

/** The CLI's arguments for a child started in another directory: paths made absolute, tsx resolved from here. */
const cliFrom = () =>
  CLI.map((part) => (/\.(js|ts)$/.test(part) ? resolve(part) : part === 'tsx' ? import.meta.resolve('tsx') : part));

t.test('two gateways started in one directory keep their own state (issue #54 item 4)', async (t) => {
  const checkout = tempDir(t);
  // The state of a gateway from before: its saved config (for gw-a) and keys in the shared ./data.
  mkdirSync(join(checkout, 'data'));
  const legacyConfig = { jws: `e30.${Buffer.from(JSON.stringify({ aud: 'gw-a' })).toString('base64url')}.x`, jwks: {} };
  writeFileSync(join(checkout, 'data', 'gateway-config.json'), JSON.stringify(legacyConfig));
  writeFileSync(join(checkout, 'data', 'gateway-cookie.key'), 'legacy-cookie-key', { mode: 0o600 });
  const start = (clientId: string, extra: string[] = []) =>
    startListening(process.execPath, [...cliFrom(), 'gateway', '--port', '0', '--client-id', clientId, ...extra], {
      cwd: checkout,
      env: { KEYPLANE_GATEWAY_CLIENT_SECRET: 's3cret' },
    });
  const a = await start('gw-a');
  t.teardown(() => a.stop('SIGKILL'));
  const b = await start('gw-b');
  t.teardown(() => b.stop('SIGKILL'));
  const own = (id: string) => join(checkout, 'data', 'gateways', id);
  t.equal(
    readFileSync(join(own('gw-a'), 'gateway-cookie.key'), 'utf8'),
    'legacy-cookie-key',
    'gw-a took its state along from ./data (its saved config names it), so its sessions stay open',
  );
  t.ok(existsSync(join(own('gw-a'), 'gateway-config.json')));
  t.notOk(existsSync(join(own('gw-b'), 'gateway-config.json')), "gw-b did not take gw-a's config");
  t.not(
    readFileSync(join(own('gw-b'), 'gateway-signing-key.json'), 'utf8'),
    readFileSync(join(own('gw-a'), 'gateway-signing-key.json'), 'utf8'),
    'each has its own signing key',
  );
  t.equal(statSync(own('gw-b')).mode & 0o777, 0o700);
  const explicit = tempDir(t);
  const c = await start('gw-c', ['--data', explicit]);
  t.teardown(() => c.stop('SIGKILL'));
  t.ok(existsSync(join(explicit, 'gateway-signing-key.json')), '--data puts the state where it says');
  for (const server of [a, b, c]) t.equal(await server.stop('SIGTERM'), 0);
  t.match(a.stderr(), /gateway\.state_adopted/, 'and said so');
  t.notMatch(b.stderr(), /gateway\.state_adopted/);
});
