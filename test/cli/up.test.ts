import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCli } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { tempDir } from '../helpers/build.js';
import { until } from '../helpers/until.js';

t.test('keyplane up refuses a bad port with exit 2', async (t) => {
  const result = await runInProcess(['up', '--gateway-port', 'eighty', '--data', tempDir(t)]);
  t.equal(result.code, 2);
  t.match(result.stderr, /--gateway-port must be a port number/);
});

t.test('keyplane up and keyplane control-plane read the same configuration the same way', async (t) => {
  const dir = tempDir(t);
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'fetch:\n  allowPrivateTargets: yes please\nnonsense: 1\n');
  const answers = [];
  for (const args of [
    ['up', '--config', bad],
    ['control-plane', '--config', bad],
    ['up'],
    ['control-plane'],
  ] as const) {
    const data = join(dir, `data-${answers.length}`);
    const env = args.length === 1 ? { KEYPLANE_CONFIG: bad } : {};
    const result = await runInProcess([...args, '--port', '0', '--data', data], env);
    t.equal(result.code, 2, `${args.join(' ')}: a configuration error`);
    answers.push(result.stderr);
  }
  t.match(answers[0], /nonsense is not a known key/);
  t.match(answers[0], /fetch\.allowPrivateTargets/);
  t.same(new Set(answers).size, 1, 'the same problems, word for word, from the flag and from KEYPLANE_CONFIG');
});

t.test(
  'keyplane up runs three servers: the gateway holds its config and protects the demo app',
  { timeout: 90_000 },
  async (t) => {
    // With the control plane's configuration in KEYPLANE_CONFIG, as docs/configuration.md shows it
    // (a key no gateway has: the try-out's gateway is not configured from that file).
    const dir = tempDir(t);
    writeFileSync(join(dir, 'keyplane.yaml'), 'fetch:\n  allowPrivateTargets: true\n');
    const up = await startCli(
      ['up', '--port', '0', '--gateway-port', '0', '--demo-port', '0', '--data', join(dir, 'data')],
      { KEYPLANE_CONFIG: join(dir, 'keyplane.yaml') },
      60_000,
    );
    t.teardown(() => up.stop());
    const urls = await until('three listening lines', async () => {
      const found = [...up.stdout().matchAll(/^listening (\S+)$/gm)].map((m) => m[1]!);
      return found.length >= 3 ? found : undefined;
    });
    const [controlPlane, gateway, demo] = urls as [string, string, string];
    t.ok(demo, 'control plane, gateway and demo app are listening');
    const ready = await until('the gateway to be ready', async () => {
      const status = (await fetch(`${gateway}/readyz`)).status;
      return status === 200 ? status : undefined;
    });
    t.equal(ready, 200, 'the gateway pulled its signed config from the control plane');

    const api = await fetch(`${gateway}/api/whoami`);
    t.equal(api.status, 401, 'an API caller without a token is refused');
    const browser = await fetch(`${gateway}/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
    t.equal(browser.status, 302);
    t.match(
      browser.headers.get('location'),
      `${controlPlane}/auth/authorize?`,
      'a page load goes to the control plane to sign in',
    );
    const open = (await (await fetch(`${gateway}/public`, { headers: { accept: 'application/json' } })).json()) as {
      ok: boolean;
      path: string;
    };
    t.match(open, { ok: true, path: '/public' }, 'a public route reaches the demo app');

    const status = await fetch(`${controlPlane}/.well-known/openid-configuration`);
    t.equal(status.status, 200);
    const icon = await fetch(`${gateway}/favicon.ico`);
    t.equal(icon.status, 200, "the demo app's icon is public behind the gateway");
    t.match(icon.headers.get('content-type'), /^image\/svg\+xml/);

    // What a person sees on the terminal: each URL and the founder link once, no JSON request logs.
    const stderr = up.stderr();
    t.notMatch(stderr, /^\{/m, 'no JSON log line reaches the terminal, though requests were served');
    t.notMatch(up.stdout() + stderr, /strict mode/, 'no schema compiler warning (Ajv strict mode) at start');
    t.equal(stderr.match(/\/auth\?setup=/g)?.length, 1, 'the founder link is printed once');
    t.equal(stderr.split(`${gateway}/ `).length - 1, 1, 'the gateway URL is printed once');
    t.equal(stderr.split(`${controlPlane}/auth\n`).length - 1, 1, 'the control plane URL is printed once');
    t.equal(stderr.split(`${demo}/`).length - 1, 1, 'the demo app URL is printed once');
    t.match(
      stderr,
      /Keyplane is up\.[\s\S]*No founder account yet[\s\S]*Only warnings and errors are logged here/,
      'the founder link comes with the summary',
    );
    t.equal(await up.stop(), 0, 'SIGTERM drains all three and exits 0');
  },
);
