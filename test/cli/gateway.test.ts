import t from 'tap';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { startCli } from '../helpers/cli.js';
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
  const server = await startCli(['gateway', '--port', '0', '--public-url', 'https://gate.example.test'], {
    KEYPLANE_DATA_DIR: tempDir(t),
  });
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
  ])
    t.match(help.stdout, flag);
});
