import t from 'tap';
import { runCli, startCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/build.js';

t.test('keyplane up refuses a bad port with exit 2', async (t) => {
  const result = await runCli(['up', '--gateway-port', 'eighty', '--data', tempDir(t)]);
  t.equal(result.code, 2);
  t.match(result.stderr, /--gateway-port must be a port number/);
});

t.test('keyplane up runs three servers: the gateway holds its config and protects the demo app', { timeout: 90_000 }, async (t) => {
  const up = await startCli(['up', '--port', '0', '--gateway-port', '0', '--demo-port', '0', '--data', tempDir(t)], {}, 60_000);
  t.teardown(() => up.stop());
  let urls: string[] = [];
  for (let i = 0; i < 200 && urls.length < 3; i++) {
    urls = [...up.stdout().matchAll(/^listening (\S+)$/gm)].map((m) => m[1]!);
    if (urls.length < 3) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const [controlPlane, gateway, demo] = urls as [string, string, string];
  t.ok(demo, 'control plane, gateway and demo app are listening');
  let ready = 0;
  for (let i = 0; i < 100 && ready !== 200; i++) {
    ready = (await fetch(`${gateway}/readyz`)).status;
    if (ready !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.equal(ready, 200, 'the gateway pulled its signed config from the control plane');

  const api = await fetch(`${gateway}/api/whoami`);
  t.equal(api.status, 401, 'an API caller without a token is refused');
  const browser = await fetch(`${gateway}/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
  t.equal(browser.status, 302);
  t.match(browser.headers.get('location'), `${controlPlane}/auth/authorize?`, 'a page load goes to the control plane to sign in');
  const open = await (await fetch(`${gateway}/public`, { headers: { accept: 'application/json' } })).json() as { ok: boolean; path: string };
  t.match(open, { ok: true, path: '/public' }, 'a public route reaches the demo app');

  const status = await fetch(`${controlPlane}/.well-known/openid-configuration`);
  t.equal(status.status, 200);
  t.equal(await up.stop(), 0, 'SIGTERM drains all three and exits 0');
});
