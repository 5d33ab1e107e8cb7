import t, { type Test } from 'tap';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TEST_MASTER_KEY, tempDir } from '../helpers/build.js';
import { CLI, runCli, startListening, type Server } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { codeBlocksUnder } from '../helpers/doc-blocks.js';
import { docCommand, type RunnableCommand } from '../helpers/doc-examples.js';
import { freePort } from '../helpers/free-port.js';
import { LIVE_ADMIN, LiveBrowser, registerLiveClient, startLiveControlPlane } from '../helpers/live-browser.js';
import { redisAvailability, REDIS_URL } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { startUpstream } from '../gateway/helpers.js';

/**
 * The docs' example commands that no guide suite runs (docs/cli.md#every-example-runs), each taken
 * from its page by `docCommand` and run as written against one real control plane: the clients
 * in-process through the CLI's program, the servers as processes (each answers, then drains on
 * SIGTERM). Only the placeholders a page writes (`$ISSUER`, `cl_…`, `URL`, paths under
 * /var/lib) take this run's values; a port or a data directory a command leaves to its default
 * comes from KEYPLANE_CONFIG or the working directory, so the words stay the page's.
 */
t.setTimeout(240_000);

const dir = tempDir(t, 'keyplane-doc-commands-');
const dataDir = join(dir, 'cp');
const server = await startLiveControlPlane(t, { dataDir, 'ledger.sealIntervalMs': 60_000 });
const issuer = server.url;
const env = { KEYPLANE_ADMIN_TOKEN: LIVE_ADMIN };

const upstreamUrl = (await startUpstream(t)).url;

// Servers run from a directory of their own, as a reader's shell would, with this checkout's CLI.
symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'node_modules'));
const cli = CLI.map((arg) => (arg.endsWith('.ts') || arg.endsWith('.js') ? join(process.cwd(), arg) : arg));

/** A YAML file for KEYPLANE_CONFIG (what a command leaves to its defaults, such as the port). */
function yaml(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

async function serve(command: RunnableCommand, extraEnv: Record<string, string>): Promise<Server> {
  const started = await startListening(process.execPath, [...cli, ...command.args], {
    env: { ...command.env, ...extraEnv },
    cwd: dir,
    timeoutMs: 180_000,
  });
  t.teardown(() => started.stop('SIGKILL'));
  return started;
}

/** SIGTERM drains and exits 0 (docs/cli.md#conventions). */
async function stops(t: Test, running: Server) {
  t.equal(await running.stop('SIGTERM'), 0, 'drains on SIGTERM and exits 0');
}

const owner = new LiveBrowser(issuer);
await owner.signUp('bea');
await owner.postJson(`${issuer}/auth/orgs/create`, { name: 'Acme' });
const bea = (await server.services.storage.identities.findByUsername('bea'))!;

// The gateway clients the gateway pages start: one with a public route, and docs/mcp.md's tool gateway.
const [gatewayPort, mcpPort] = [await freePort(), await freePort()];
const gatewayUrl = `http://localhost:${gatewayPort}`;
const mcpUrl = `http://localhost:${mcpPort}`;
const gatewayClient = await registerLiveClient(issuer, {
  client_name: 'Gateway',
  redirect_uris: [`${gatewayUrl}/_gate/callback`],
  token_endpoint_auth_method: 'client_secret_basic',
  gateway: { mode: 'enforce', routes: [{ path: '/public', public: true }] },
});
const mcpClient = await registerLiveClient(issuer, {
  client_name: 'Notes tools gateway',
  redirect_uris: [`${mcpUrl}/_gate/callback`],
  scope: 'openid email offline_access',
  token_endpoint_auth_method: 'client_secret_basic',
  gateway: {
    mode: 'enforce',
    routes: [
      { path: '/mcp', mcp: true, min_assurance: 'passkey', tools: { delete_x: { min_assurance: 'sensitive' } } },
    ],
  },
});

// The servers start together while the commands below run.
const redis = await redisAvailability();
const servers = {
  workers: serve(
    docCommand('docs/scaling.md', 'keyplane control-plane --workers auto --data /var/lib/keyplane', {
      '/var/lib/keyplane': join(dir, 'workers'),
    }),
    { KEYPLANE_MASTER_KEY: TEST_MASTER_KEY, KEYPLANE_CONFIG: yaml('workers.yaml', 'port: 0\n') },
  ),
  gateway: redis.run
    ? serve(
        docCommand(
          'docs/gateway.md',
          'keyplane gateway --upstream http://127.0.0.1:4490 --client-id gw-demo --client-secret S [--port 4480] [--public-url URL] [--control-plane URL] [--data DIR] [--trusted-proxies CIDR,…] [--redis URL] [--config FILE]',
          {
            'http://127.0.0.1:4490': upstreamUrl,
            'gw-demo': gatewayClient['client_id'],
            S: gatewayClient['client_secret'],
            '4480': String(gatewayPort),
            '--public-url URL': `--public-url ${gatewayUrl}`,
            '--control-plane URL': `--control-plane ${issuer}`,
            DIR: join(dir, 'gateway'),
            'CIDR,…': '127.0.0.1/32,::1/128',
            '--redis URL': `--redis ${REDIS_URL}`,
            FILE: yaml('gateway.yaml', 'logLevel: warn\n'),
          },
        ),
        {},
      )
    : undefined,
  mcp: serve(
    docCommand(
      'docs/mcp.md',
      'keyplane gateway --public-url https://tools.example.com --control-plane https://id.example.com --client-id cl_… --upstream http://127.0.0.1:3000',
      {
        'https://tools.example.com': mcpUrl,
        'https://id.example.com': issuer,
        'cl_…': mcpClient['client_id'],
        '…': mcpClient['client_secret'],
        'http://127.0.0.1:3000': upstreamUrl,
      },
    ),
    { KEYPLANE_CONFIG: yaml('mcp.yaml', `port: ${mcpPort}\n`) },
  ),
};
// A start that fails is reported by the test that waits for it.
for (const started of Object.values(servers)) started?.catch(() => undefined);

/** Runs an example in-process with the admin token; it must exit 0. */
async function runs(t: Test, command: RunnableCommand, extraEnv: Record<string, string> = env) {
  const result = await runInProcess(command.args, { ...extraEnv, ...command.env });
  t.equal(result.code, 0, `${command.shell}\n${result.stderr}`);
  return result;
}

/**
 * Runs an offline command (one that opens the server's store) as its own process, as a reader's
 * shell does beside a running server. In-process it would deadlock against the in-process server:
 * SQLite's busy wait blocks the one event loop that would let the server's open write
 * transaction commit, so the command waited out its 30 s and failed with "database is locked".
 */
async function runsApart(t: Test, command: RunnableCommand, extraEnv: Record<string, string>) {
  const result = await runCli(command.args, { ...extraEnv, ...command.env });
  t.equal(result.code, 0, `${command.shell}\n${result.stderr}`);
  return result;
}

t.test('docs/apis.md: declare, list, show and remove an API from a terminal', async (t) => {
  const values = { $ISSUER: issuer };
  const added = await runs(
    t,
    docCommand(
      'docs/apis.md',
      "keyplane apis add --resource https://notes.example.com --name Notes --scope 'notes.read=Read your notes' --scope 'notes.write=Change your notes' --control-plane \"$ISSUER\"",
      values,
    ),
  );
  const apiId = added.stdout.trim();
  t.match(apiId, /^api_\S+$/, 'the new API id on stdout');
  const listed = await runs(t, docCommand('docs/apis.md', 'keyplane apis list --control-plane "$ISSUER"', values));
  t.match(listed.stdout, `${apiId} https://notes.example.com "Notes" (notes.read notes.write)`);
  const byId = { ...values, 'api_…': apiId };
  const shown = await runs(t, docCommand('docs/apis.md', 'keyplane apis show api_… --control-plane "$ISSUER"', byId));
  t.match(shown.stdout, 'scope notes.read: Read your notes');
  const removed = await runs(
    t,
    docCommand('docs/apis.md', 'keyplane apis remove api_… --control-plane "$ISSUER"', byId),
  );
  t.match(removed.stdout, `removed ${apiId}`);

  // notes-api.json is "the POST body above": the curl block's JSON, with a real client id.
  const curl = codeBlocksUnder('docs/apis.md', 'Declaring an API')[0]!.text;
  const body = /-d '(\{[\s\S]*?\})'/.exec(curl)![1]!.replace('cl_…', mcpClient['client_id']);
  writeFileSync(join(dir, 'notes-api.json'), body);
  const fromFile = await runs(
    t,
    docCommand('docs/apis.md', 'keyplane apis add --file notes-api.json --control-plane "$ISSUER"', {
      ...values,
      'notes-api.json': join(dir, 'notes-api.json'),
    }),
  );
  t.match(fromFile.stdout, /^api_\S+\n$/);
});

t.test('docs/console.md: grant, list and revoke a console role', async (t) => {
  const values = { 'http://localhost:4400': issuer };
  const granted = await runs(
    t,
    docCommand(
      'docs/console.md',
      'keyplane operators grant bea --role auditor --control-plane http://localhost:4400',
      values,
    ),
  );
  t.match(granted.stdout, `bea (${bea.identityId}) is now auditor, receipt `);
  const listed = await runs(
    t,
    docCommand('docs/console.md', 'keyplane operators list --control-plane http://localhost:4400', values),
  );
  t.match(listed.stdout, new RegExp(`^auditor\\tbea\\t${bea.identityId}\\t`, 'm'));
  const revoked = await runs(
    t,
    docCommand('docs/console.md', 'keyplane operators revoke bea --control-plane http://localhost:4400', values),
  );
  t.match(revoked.stdout, `bea (${bea.identityId}) holds no console role now`);
});

t.test("docs/events.md: the operator lists and disables a receiver's stream", async (t) => {
  const values = { 'http://localhost:4400': issuer };
  const now = Date.now();
  // A receiver's stream, as POST /ssf/streams leaves it (that path has its own suites).
  await server.services.storage.ssf.insertStream({
    streamId: 'sst_example',
    clientId: 'cl_receiver',
    delivery: 'poll',
    endpointUrl: null,
    authorizationSealed: null,
    eventsRequested: [],
    description: null,
    status: 'enabled',
    statusReason: null,
    createdAt: now,
    updatedAt: now,
  });
  const listed = await runs(
    t,
    docCommand('docs/events.md', 'keyplane ssf streams list --control-plane http://localhost:4400', values),
  );
  t.match(listed.stdout, /^sst_example\tcl_receiver\tpoll\tenabled\t0 subject\(s\), 0 pending, 0 delivered, 0 dead$/m);
  const disabled = await runs(
    t,
    docCommand(
      'docs/events.md',
      'keyplane ssf streams disable sst_example --control-plane http://localhost:4400',
      values,
    ),
  );
  t.match(disabled.stdout, /^sst_example is disabled, receipt [0-9a-f]{64}\n$/);
  t.match(await server.services.storage.ssf.getStream('sst_example'), { status: 'disabled' });
});

t.test('docs/orgs.md: the operator creates a team in any org', async (t) => {
  const created = await runs(
    t,
    docCommand('docs/orgs.md', 'keyplane orgs teams create acme eng --display-name Engineering --control-plane URL', {
      URL: issuer,
    }),
  );
  t.match(created.stdout, /^created acme\/eng "Engineering"/);
});

t.test('docs/events.md and docs/ledger.md: export receipts, verify one, pin a checkpoint', async (t) => {
  await server.services.ledger.sealNow();
  const since = new Date(Date.now() - 3_600_000).toISOString();
  const until = new Date(Date.now() + 3_600_000).toISOString();
  const exported = await runs(
    t,
    docCommand(
      'docs/events.md',
      'keyplane receipts export [--since TIME] [--until TIME] [--type TYPE] [--subject ID] --control-plane URL',
      {
        '--since TIME': `--since ${since}`,
        '--until TIME': `--until ${until}`,
        TYPE: 'operator.granted',
        ID: bea.identityId,
        URL: issuer,
      },
    ),
  );
  const lines = exported.stdout
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as { hash: string; receipt: any });
  t.equal(lines.length, 1, 'the one operator.granted receipt naming bea');
  t.match(lines[0], { hash: /^[0-9a-f]{64}$/, receipt: { kind: 'operator.granted' } });
  const hash = lines[0]!.hash;

  const verified = await runs(
    t,
    docCommand('docs/events.md', 'keyplane receipt verify HASH --control-plane URL', { HASH: hash, URL: issuer }),
  );
  t.match(verified.stdout, new RegExp(`^verified: receipt ${hash}`));

  const checkpoint = ((await (await fetch(`${issuer}/receipts/${hash}`)).json()) as { checkpoint: string }).checkpoint;
  writeFileSync(join(dir, 'checkpoint.jws'), checkpoint);
  const pinned = await runs(
    t,
    docCommand('docs/ledger.md', 'keyplane receipt verify HASH --control-plane URL [--trust-checkpoint JWS-or-FILE]', {
      HASH: hash,
      URL: issuer,
      'JWS-or-FILE': join(dir, 'checkpoint.jws'),
    }),
  );
  t.match(pinned.stdout, /^verified: /);
});

t.test('docs/ledger.md: rotate the note key and audit the ledger offline, beside the running server', async (t) => {
  const keyEnv = { KEYPLANE_MASTER_KEY: TEST_MASTER_KEY };
  // Without --data the command works on ./data: here the server's data directory.
  const rotated = await runsApart(
    t,
    docCommand('docs/ledger.md', 'keyplane ledger rotate-note-key [--overlap-days N]', { N: '1' }),
    { ...keyEnv, KEYPLANE_DATA_DIR: dataDir },
  );
  t.match(rotated.stdout, /^new note key: /m);
  const config = yaml('ledger.yaml', 'logLevel: warn\n');
  const again = await runsApart(
    t,
    docCommand('docs/ledger.md', 'keyplane ledger rotate-note-key [--overlap-days N] [--data DIR] [--config FILE]', {
      N: '1',
      DIR: dataDir,
      FILE: config,
    }),
    keyEnv,
  );
  t.match(again.stdout, /^new note key: /m);
  const audit = await runsApart(
    t,
    docCommand('docs/ledger.md', 'keyplane ledger audit [--data DIR] [--config FILE]', { DIR: dataDir, FILE: config }),
    keyEnv,
  );
  t.match(audit.stdout, /^ledger intact: [1-9]\d* epoch\(s\)/);
});

t.test('docs/rollout.md: classify signs a trust profile', async (t) => {
  const profile = yaml(
    'shop.yaml',
    [
      'contract: project-trust-profile/v1',
      'project: shop',
      'exposure: public',
      'principals:',
      '  humans: true',
      '  agents: false',
      'environments:',
      '  - name: local',
      '    redirect_uris: [https://shop.example.com/_gate/callback]',
      '    resources: []',
      'data_class: confidential',
      'required_assurance: passkey',
      '',
    ].join('\n'),
  );
  const classified = await runs(
    t,
    docCommand('docs/rollout.md', 'keyplane rollout classify FILE --control-plane URL', { FILE: profile, URL: issuer }),
  );
  t.match(classified.stdout, /^signed trust profile shop version 1/m);
});

t.test('docs/scaling.md: the control plane with a worker per core', async (t) => {
  const running = await servers.workers;
  t.equal(running.stdout().trim(), `listening ${running.url}`, 'one listening line, from the primary');
  t.equal((await fetch(`${running.url}/healthz`)).status, 200);
  await stops(t, running);
});

t.test(
  'docs/gateway.md: the gateway with every documented flag',
  { skip: redis.run ? false : redis.reason },
  async (t) => {
    const running = (await servers.gateway)!;
    t.equal(running.url, gatewayUrl);
    // Fail-closed until the signed config arrives; then the public route reaches the app.
    const page = await until('the public route reaches the upstream', async () => {
      const answer = await fetch(`${gatewayUrl}/public/x`);
      return answer.status === 200 ? ((await answer.json()) as Record<string, unknown>) : undefined;
    });
    t.match(page, { ok: true, url: '/public/x' }, "the upstream's answer");
    await stops(t, running);
  },
);

t.test("docs/mcp.md: the tool gateway in front of the MCP server, and its client's record", async (t) => {
  const running = await servers.mcp;
  t.equal(running.url, mcpUrl);
  const metadata = await until('the protected resource metadata', async () => {
    const answer = await fetch(`${mcpUrl}/.well-known/oauth-protected-resource/mcp`);
    return answer.status === 200 ? ((await answer.json()) as Record<string, unknown>) : undefined;
  });
  t.match(metadata, { resource: `${mcpUrl}/mcp`, authorization_servers: [issuer] });
  const shown = await runs(
    t,
    docCommand('docs/mcp.md', 'keyplane clients show cl_… --control-plane https://id.example.com', {
      'cl_…': mcpClient['client_id'],
      'https://id.example.com': issuer,
    }),
  );
  t.match(shown.stdout, mcpClient['client_id']);
  await stops(t, running);
});
