import t from 'tap';
import { existsSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { request } from 'undici';
import { CLI, childEnv, runCli, startCli } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { tempDir } from '../helpers/build.js';
import { until } from '../helpers/until.js';

// The servers, the taken port and one usage error run as real processes; configuration, help and
// the offline commands run in-process through the same program.
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
  t.match(
    server.stderr(),
    new RegExp(`^created a new database at SQLite ${data}/keyplane\\.db \\(\\d+ migration\\(s\\)`, 'm'),
    'a new store is said in one line, so a mistyped --data is noticed',
  );
  t.match(
    server.stderr(),
    new RegExp(`^No founder account yet\\. Create it within 24 hours at: ${server.url}/auth\\?setup=`, 'm'),
    'the founder link is a plain line',
  );
  t.equal(statSync(join(data, 'master.key')).mode & 0o777, 0o600);
  // Unlike `up`, the server command keeps JSON log lines for a log collector, one per request.
  const requestLogged = () =>
    server
      .stderr()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .some(
        (line) => (JSON.parse(line) as { req?: { url?: string } }).req?.url === '/.well-known/openid-configuration',
      );
  t.ok(
    await until('the request log line', async () => requestLogged() || undefined),
    'requests are logged as JSON lines',
  );
  t.equal(await server.stop('SIGTERM'), 0);
});

t.test('an explicit issuer is the printed URL', async (t) => {
  const server = await startCli([
    'control-plane',
    '--port',
    '0',
    '--data',
    tempDir(t),
    '--issuer',
    'https://id.example.test',
  ]);
  t.teardown(() => server.stop('SIGKILL'));
  t.equal(server.url, 'https://id.example.test');
  t.equal(await server.stop('SIGTERM'), 0);
});

t.test('an invalid configuration lists its problems and exits 2', async (t) => {
  const result = await runInProcess(['control-plane', '--port', 'abc', '--data', tempDir(t)], {
    KEYPLANE_ISSUER: 'not a url',
  });
  t.equal(result.code, 2);
  t.match(result.stderr, /port must be integer/);
  t.match(result.stderr, /issuer is not a valid URL/);
  t.equal(result.stdout, '');
});

t.test('usage errors exit 2, help exits 0', async (t) => {
  t.equal((await runInProcess(['control-plane', '--no-such-flag'])).code, 2);
  t.equal((await runCli(['no-such-command'])).code, 2);
  const help = await runInProcess(['control-plane', '--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /--issuer <url>/);
  t.match((await runInProcess(['--help'])).stdout, /control-plane/);
});

t.test('building the command tree loads no server code: each command loads its own when it runs', async (t) => {
  // The CommonJS packages a fresh process has loaded once the program is built (docs/cli.md#start-up).
  const program = CLI[CLI.length - 1]!.replace(/main\.(js|ts)$/, 'program.$1');
  const script = `import { createRequire } from 'node:module';
    import { pathToFileURL } from 'node:url';
    (await import(pathToFileURL(process.argv[1]).href)).buildProgram();
    console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));`;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [...CLI.slice(0, -1), '--input-type=module', '-e', script, program],
    {
      env: childEnv(),
    },
  );
  const loaded = (JSON.parse(stdout) as string[])
    .map((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1])
    .filter(Boolean);
  t.ok(loaded.includes('commander'), 'the check sees CommonJS packages');
  // better-sqlite3 may be loaded under its Node 20 alias (better-sqlite3-node20).
  for (const server of ['fastify', 'better-sqlite3', 'pg', 'ioredis', 'ajv']) {
    t.notOk(
      loaded.some((name) => name === server || name!.startsWith(`${server}-`)),
      `${server} is not loaded`,
    );
  }
});

t.test('a taken port is a clear failure, exit 1', async (t) => {
  // Any listener takes the port; a second control plane would only cost another start.
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => taken.close(() => resolve())));
  const port = String((taken.address() as { port: number }).port);
  const second = await runCli(['control-plane', '--port', port, '--data', tempDir(t)]);
  t.equal(second.code, 1);
  t.match(second.stderr, /address in use/);
});

t.test('keys rotate and list; backup writes a copy', async (t) => {
  const data = tempDir(t);
  t.equal((await runInProcess(['migrate', '--data', data])).code, 0);
  const before = await runInProcess(['keys', 'list', '--data', data], { KEYPLANE_MASTER_KEY: 'k'.repeat(40) });
  t.equal(before.code, 0);
  const [currentBefore] = before.stdout.split('\n').filter((l) => l.endsWith('current'));
  const rotated = await runInProcess(['keys', 'rotate', '--data', data], { KEYPLANE_MASTER_KEY: 'k'.repeat(40) });
  t.equal(rotated.code, 0, rotated.stderr);
  t.match(rotated.stdout, /^rotated: /);
  const after = await runInProcess(['keys', 'list', '--data', data], { KEYPLANE_MASTER_KEY: 'k'.repeat(40) });
  t.not(
    after.stdout.split('\n').find((l) => l.endsWith('current')),
    currentBefore,
  );
  t.ok(after.stdout.includes(currentBefore!.split(' ')[0]!), 'the retired key is still listed');

  const out = join(tempDir(t), 'backup.db');
  const backup = await runInProcess(['backup', '--data', data, '--out', out]);
  t.equal(backup.code, 0, backup.stderr);
  t.ok(existsSync(out));
  t.equal((await runInProcess(['backup', '--data', data, '--out', out])).code, 2, 'refuses to overwrite');
  t.equal(
    (await runInProcess(['backup', '--data', tempDir(t), '--out', join(tempDir(t), 'x.db')])).code,
    2,
    'refuses a dir without a database',
  );
});
