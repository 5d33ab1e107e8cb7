import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { ADMIN, registerClient } from '../helpers/oidc.js';
import { buildSignedIn } from '../helpers/signed-in.js';
import { CLI, childEnv, runCli } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';

t.setTimeout(300_000);

// One control plane on a real socket for the whole file. Commands whose output a shell captures
// (the rotated secret alone on stdout, a refusal's envelope and exit code, the tail's signals) run
// as real processes; the other variations run in-process through the same program.
const built = await buildSignedIn(t, { config: { adminToken: ADMIN, 'ledger.sealIntervalMs': 50 } });
const { app, services } = built;
const { identityId, browser } = await built.signIn({ username: 'ada' });
await app.listen({ port: 0, host: '127.0.0.1' });
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const env = { KEYPLANE_ADMIN_TOKEN: ADMIN };

t.test('keyplane clients list, show, rotate-secret and revoke', async (t) => {
  const notes = await registerClient(app);
  const other = await registerClient(app, { client_name: 'Other', token_endpoint_auth_method: 'none' });

  const list = await runInProcess(['clients', 'list', '--control-plane', url], env);
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, `${notes.client_id} "Notes" (confidential, revision 1)`);
  t.match(list.stdout, `${other.client_id} "Other" (public, revision 1)`);
  t.match(list.stderr, /listing clients at .*\n2 client\(s\)/s);
  const listed = JSON.parse((await runInProcess(['clients', 'list', '--control-plane', url, '--json'], env)).stdout);
  t.same(
    listed.clients.map((c: { client_id: string }) => c.client_id).sort(),
    [notes.client_id, other.client_id].sort(),
  );
  t.notMatch(JSON.stringify(listed), /secret_hash|client_secret"/, 'no secret in the listing');

  const show = await runInProcess(['clients', 'show', notes.client_id, '--control-plane', url], env);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, 'redirect_uri: https://notes.example.com/callback');
  t.match(
    JSON.parse(
      (await runInProcess(['clients', 'show', notes.client_id, '--control-plane', url, '--json'], env)).stdout,
    ),
    { ok: true, client: { client_id: notes.client_id, owner: null } },
  );

  const before = (await services.storage.clients.get(notes.client_id))!.secretHash;
  const rotated = await runCli(['clients', 'rotate-secret', notes.client_id, '--control-plane', url], env);
  t.equal(rotated.code, 0, rotated.stderr);
  t.match(rotated.stdout, /^[A-Za-z0-9_-]{43}\n$/, 'only the new secret on stdout');
  t.match(rotated.stderr, /revision 2, receipt [0-9a-f]{64}/);
  t.not((await services.storage.clients.get(notes.client_id))!.secretHash, before);
  const token = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { authorization: `Basic ${Buffer.from(`${notes.client_id}:${notes.client_secret}`).toString('base64')}` },
    payload: { grant_type: 'refresh_token', refresh_token: 'x' },
  });
  t.equal(token.json().reason, 'invalid_client', 'the old secret no longer works');
  const publicRotate = await runInProcess(
    ['clients', 'rotate-secret', other.client_id, '--control-plane', url, '--json'],
    env,
  );
  t.equal(publicRotate.code, 1);
  t.match(JSON.parse(publicRotate.stdout), { ok: false, reason: 'invalid_request' });

  const revoked = await runInProcess(['clients', 'revoke', other.client_id, '--control-plane', url, '--json'], env);
  t.equal(revoked.code, 0, revoked.stderr);
  t.match(JSON.parse(revoked.stdout), {
    ok: true,
    client_id: other.client_id,
    revoked: true,
    receipt: /^[0-9a-f]{64}$/,
  });
  t.equal(await services.storage.clients.get(other.client_id), null);
  const again = await runCli(['clients', 'show', other.client_id, '--control-plane', url, '--json'], env);
  t.equal(again.code, 1);
  t.match(JSON.parse(again.stdout), { ok: false, reason: 'not_found' });
  t.match(again.stderr, /cannot look up .*: not_found/);
});

t.test('keyplane clients register registers with the admin token and shows the credentials once', async (t) => {
  const registered = await runInProcess(
    [
      'clients',
      'register',
      '--name',
      'Wiki',
      '--redirect-uri',
      'https://wiki.example.com/callback',
      '--redirect-uri',
      'https://wiki.example.com/callback2',
      '--scope',
      'openid profile',
      '--control-plane',
      url,
    ],
    env,
  );
  t.equal(registered.code, 0, registered.stderr);
  const lines = Object.fromEntries(
    registered.stdout
      .trim()
      .split('\n')
      .map((l) => l.split(': ') as [string, string]),
  );
  t.match(lines, { client_id: /^cl_/, client_secret: /^[A-Za-z0-9_-]{43}$/, registration_access_token: /.+/ });
  t.match(registered.stderr, /not shown again/);
  const stored = (await services.storage.clients.get(lines['client_id']!))!;
  t.same(stored.metadata.redirect_uris, ['https://wiki.example.com/callback', 'https://wiki.example.com/callback2']);
  t.equal(stored.metadata.client_name, 'Wiki');

  const spa = await runInProcess(
    [
      'clients',
      'register',
      '--name',
      'SPA',
      '--public',
      '--redirect-uri',
      'https://spa.example.com/cb',
      '--control-plane',
      url,
      '--json',
    ],
    env,
  );
  t.equal(spa.code, 0, spa.stderr);
  t.match(JSON.parse(spa.stdout), { client_id: /^cl_/, token_endpoint_auth_method: 'none' });
  t.notMatch(spa.stdout, /client_secret"/, 'a public client gets no secret');

  const refused = await runInProcess(
    ['clients', 'register', '--redirect-uri', 'http://evil.example.com/cb', '--control-plane', url, '--json'],
    env,
  );
  t.equal(refused.code, 1, 'an invalid registration is refused by the server');
  t.match(JSON.parse(refused.stdout), { ok: false, reason: /invalid_redirect_uri|invalid_client_metadata/ });
  t.equal((await runInProcess(['clients', 'register', '--control-plane', url], env)).code, 2, 'nothing to register');
});

t.test("keyplane sessions revoke ends an account's sessions", async (t) => {
  t.equal((await browser.get('/account?format=json')).statusCode, 200);
  const unknown = await runInProcess(
    ['sessions', 'revoke', 'ada', '--session', 'nope', '--control-plane', url, '--json'],
    env,
  );
  t.equal(unknown.code, 1);
  t.match(JSON.parse(unknown.stdout), { ok: false, reason: 'unknown_session' });
  const done = await runInProcess(['sessions', 'revoke', 'ada', '--control-plane', url], env);
  t.equal(done.code, 0, done.stderr);
  t.match(
    done.stdout,
    new RegExp(`^ada \\(${identityId}\\): 1 session\\(s\\) revoked\\n  \\S+ receipt [0-9a-f]{64}\\n$`),
  );
  t.equal((await browser.get('/account?format=json')).statusCode, 401, 'the session ended');
  const none = JSON.parse(
    (await runInProcess(['sessions', 'revoke', identityId, '--control-plane', url, '--json'], env)).stdout,
  );
  t.match(none, { ok: true, identityId, revoked: [], receipts: [] });
});

t.test('every operator command exits 2 without a token or a control plane, 1 on a wrong token', async (t) => {
  for (const args of [
    ['clients', 'revoke', 'x'],
    ['sessions', 'revoke', 'ada'],
  ]) {
    const noToken = await runInProcess([...args, '--control-plane', url], { KEYPLANE_ADMIN_TOKEN: '' });
    t.equal(noToken.code, 2, `${args.join(' ')} without a token`);
    t.match(noToken.stderr, /KEYPLANE_ADMIN_TOKEN/);
  }
  t.equal((await runInProcess(['clients', 'list'], env)).code, 2, 'no --control-plane');
  const wrong = await runCli(['clients', 'list', '--control-plane', url, '--json'], {
    KEYPLANE_ADMIN_TOKEN: 'wrong-token-0123456789abcdef0123456789',
  });
  t.equal(wrong.code, 1);
  t.match(JSON.parse(wrong.stdout), { ok: false, reason: 'unauthorized' });
});

function startTail(args: string[]) {
  const child = spawn(
    process.execPath,
    [...CLI, 'receipts', 'tail', '--control-plane', url, '--interval', '100', ...args],
    {
      env: childEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const lines = async (n: number) => {
    for (let i = 0; i < 600 && stdout.split('\n').filter(Boolean).length < n; i++)
      await new Promise((r) => setTimeout(r, 50));
    return stdout.split('\n').filter(Boolean);
  };
  return { child, lines, out: () => stdout, err: () => stderr };
}

async function newEpoch(): Promise<void> {
  await runInProcess(['clients', 'list', '--control-plane', url, '--json'], env);
  await services.storage.transaction((tx) =>
    services.events.record(tx, {
      type: 'contact.received',
      at: services.now(),
      outcome: 'success',
      contactId: 'ctc_t',
      topic: 'general',
      mailed: false,
    }),
  );
  await services.ledger.sealNow();
}

t.test('keyplane receipts tail follows new checkpoints, verified and chained, until --count or SIGINT', async (t) => {
  await newEpoch();
  const tail = startTail(['--count', '3', '--json']);
  t.equal((await tail.lines(1)).length, 1, 'the latest checkpoint first');
  await newEpoch();
  await tail.lines(2);
  await newEpoch();
  const [code] = (await once(tail.child, 'exit')) as [number];
  t.equal(code, 0, tail.err());
  const printed = tail
    .out()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.equal(printed.length, 3);
  for (let i = 1; i < printed.length; i++) t.equal(printed[i].epoch, printed[i - 1].epoch + 1, 'consecutive epochs');
  t.match(printed[0], { epoch: Number, size: Number, root: /^[0-9a-f]{64}$/, kid: String, checkpoint: String });
  t.match(tail.err(), /following the checkpoints of .*\nstopped after 3 checkpoint\(s\)/s);

  const endless = startTail([]);
  const [first] = await endless.lines(1);
  t.match(first, /^epoch \d+ {2}\d+ receipt\(s\) {2}root [0-9a-f]{64} {2}at \S+ {2}signed by \S+$/);
  endless.child.kill('SIGINT');
  const [stopped] = (await once(endless.child, 'exit')) as [number];
  t.equal(stopped, 0, 'SIGINT stops it cleanly');
  t.equal(
    (await runInProcess(['receipts', 'tail', '--control-plane', url, '--count', '0'])).code,
    2,
    'a bad --count is a usage error',
  );
});
