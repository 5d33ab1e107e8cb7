import t from 'tap';
import { createHash, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { startCli } from '../helpers/cli.js';
import { docCommand } from '../helpers/doc-examples.js';
import { TEST_MASTER_KEY, tempDir } from '../helpers/build.js';
import { ADMIN, CALLBACK, browse, passkeySignUp, register } from '../helpers/openid-client.js';
import { pkcePair } from '../helpers/oidc.js';
import { SoftAuthenticator } from '../helpers/soft-authenticator.js';
import { until } from '../helpers/until.js';
import { onNewConnection, processTree, replayElsewhere, type Answer } from '../helpers/worker-connections.js';

// `keyplane control-plane --workers 2` on the embedded SQLite default, without Redis: one-time
// values live with the primary process, and each is replayed to another worker than the one that
// accepted it (docs/scaling.md#workers). One server for every check: starting one is expensive.
t.setTimeout(600_000);

/** Per-IP budget on each credential path: low enough to see that workers share one count. */
const PER_IP = 20;

/** Whether a process with this pid still exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('control-plane --workers 2 shares one-time state between its workers', async (t) => {
  const data = tempDir(t);
  const config = join(data, 'keyplane.yaml');
  writeFileSync(config, `limits:\n  authPerIpPerMinute: ${PER_IP}\n  authPerAccountPerMinute: 1000\n`);
  const server = await startCli(
    ['control-plane', '--port', '0', '--data', data, '--config', config, '--workers', '2'],
    { KEYPLANE_MASTER_KEY: TEST_MASTER_KEY, KEYPLANE_ADMIN_TOKEN: ADMIN },
    180_000,
  );
  t.teardown(() => server.stop('SIGKILL'));
  const base = server.url;
  const tree = () => processTree(server.child.pid!);
  const json = (answer: Answer) => JSON.parse(answer.text) as Record<string, any>;

  t.test('prints the listening line once, after both workers listen; both serve', async (t) => {
    t.equal(server.stdout().trim(), `listening ${base}`, 'stdout carries exactly one listening line');
    const answers = await Promise.all(Array.from({ length: 8 }, () => onNewConnection(`${base}/healthz`, tree)));
    t.ok(
      answers.every((a) => a.status === 200),
      'every connection is answered',
    );
    const workers = new Set(answers.map((a) => a.worker).filter((pid) => pid !== undefined));
    t.equal(workers.size, 2, 'connections are served by two processes');
    t.notOk(workers.has(server.child.pid!), 'the primary serves no requests');
    t.equal(
      server.stderr().match(/^No founder account yet/gm)?.length,
      1,
      "the founder's setup link is announced once, by the primary",
    );
  });

  const authenticator = new SoftAuthenticator(base);
  const jar = await passkeySignUp(base, `wk-${randomUUID().slice(0, 8)}`, authenticator);
  const client = await register(base, { token_endpoint_auth_method: 'client_secret_basic' });
  const basic = `Basic ${Buffer.from(`${client['client_id']}:${client['client_secret']}`).toString('base64')}`;
  const discovery = (await (await fetch(`${base}/.well-known/openid-configuration`)).json()) as Record<string, string>;
  async function freshCode(): Promise<{ code: string; verifier: string }> {
    const { verifier, challenge } = pkcePair();
    const url = new URL(discovery['authorization_endpoint']!);
    for (const [k, v] of Object.entries({
      client_id: client['client_id'],
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: 'openid',
      state: randomUUID(),
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }))
      url.searchParams.set(k, String(v));
    const callback = await browse(url, jar, base);
    return { code: callback.searchParams.get('code')!, verifier };
  }
  const exchange = (code: { code: string; verifier: string }, headers: Record<string, string> = {}) =>
    onNewConnection(discovery['token_endpoint']!, tree, {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: code.code,
        code_verifier: code.verifier,
        redirect_uri: CALLBACK,
      }).toString(),
    });

  t.test('an authorization code redeemed at one worker is refused at the other', async (t) => {
    const code = await freshCode();
    const first = await exchange(code);
    t.equal(first.status, 200, 'the first redemption succeeds');
    const { answers, elsewhere } = await replayElsewhere(first.worker, () => exchange(code));
    t.ok(elsewhere > 0, 'a replay reached the other worker');
    for (const answer of answers) t.equal(json(answer)['error'], 'invalid_grant', 'the replay is refused');
  });

  t.test('a DPoP proof used at one worker is refused at the other (jti)', async (t) => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = await exportJWK(publicKey);
    const proof = (htm: string, htu: string, extra: Record<string, string> = {}) =>
      new SignJWT({ htm, htu, jti: randomUUID(), iat: Math.floor(Date.now() / 1000), ...extra })
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
        .sign(privateKey);
    const tokenUrl = discovery['token_endpoint']!;
    const code = await freshCode();
    let issued = await exchange(code, { dpop: await proof('POST', tokenUrl) });
    if (issued.status === 400 && issued.headers['dpop-nonce'])
      issued = await exchange(code, {
        dpop: await proof('POST', tokenUrl, { nonce: String(issued.headers['dpop-nonce']) }),
      });
    t.equal(issued.status, 200, 'a DPoP-bound token is issued');
    const accessToken = String(json(issued)['access_token']);
    const userinfo = discovery['userinfo_endpoint']!;
    const ath = createHash('sha256').update(accessToken).digest('base64url');
    let used = await proof('GET', userinfo, { ath });
    const call = () =>
      onNewConnection(userinfo, tree, { headers: { authorization: `DPoP ${accessToken}`, dpop: used } });
    let first = await call();
    if (first.status === 401 && first.headers['dpop-nonce']) {
      used = await proof('GET', userinfo, { ath, nonce: String(first.headers['dpop-nonce']) });
      first = await call();
    }
    t.equal(first.status, 200, 'the proof is accepted once');
    const { answers, elsewhere } = await replayElsewhere(first.worker, call);
    t.ok(elsewhere > 0, 'a replay reached the other worker');
    for (const answer of answers) t.equal(answer.status, 401, 'the replayed proof is refused');
  });

  t.test('a WebAuthn challenge answered at one worker is refused at the other', async (t) => {
    // The sign-up's passkey signs a new assertion (usernameless sign-in).
    const options = json(await onNewConnection(`${base}/auth/assertion-options`, tree));
    const response = authenticator.get(options['options']);
    const verify = () =>
      onNewConnection(`${base}/auth/assertion-verify`, tree, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: base },
        body: JSON.stringify({ response }),
      });
    const first = await verify();
    t.equal(first.status, 200, 'the assertion signs in once');
    const { answers, elsewhere } = await replayElsewhere(first.worker, verify);
    t.ok(elsewhere > 0, 'a replay reached the other worker');
    for (const answer of answers) t.not(answer.status, 200, 'the replayed assertion is refused');
  });

  t.test('rate limits count once across workers', async (t) => {
    const answers: Answer[] = [];
    for (let i = 0; i < PER_IP * 2; i++) answers.push(await onNewConnection(`${base}/auth/assertion-options`, tree));
    const allowed = answers.filter((a) => a.status === 200).length;
    t.ok(allowed < PER_IP, `at most ${PER_IP} sign-in starts a minute in all (${allowed} now, after the earlier ones)`);
    const limitedAt = new Set(answers.filter((a) => a.status === 429).map((a) => a.worker));
    t.ok(limitedAt.size >= 2, 'both workers refuse once the shared budget is spent');
  });

  // A request on a connection the killed worker held may get no answer at all (the socket can stay
  // open with the primary): without a deadline of its own it waited for undici's 300 s.
  const REQUEST_TIMEOUT_MS = 10_000;
  t.test('a worker killed under load is replaced; requests and receipts go on', async (t) => {
    const before = new Set(tree());
    const victim = [...before].find((pid) => pid !== server.child.pid)!;
    let stop = false;
    let killed = false;
    const after: boolean[] = [];
    const failuresPerLoop: number[] = [];
    const receipts: string[] = [];
    const load = async (writes: boolean, loop: number) => {
      failuresPerLoop[loop] = 0;
      while (!stop) {
        const ok = await (
          writes
            ? fetch(`${base}/register`, {
                signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
                method: 'POST',
                headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
                body: JSON.stringify({ client_name: 'load', redirect_uris: [CALLBACK] }),
              }).then(async (res) => {
                const body = (await res.json()) as { receipt?: string };
                if (res.status === 201 && body.receipt) receipts.push(body.receipt);
                return res.status === 201;
              })
            : fetch(`${base}/healthz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }).then(
                (res) => res.status === 200,
              )
        ).catch(() => false);
        if (killed) after.push(ok);
        if (killed && !ok) failuresPerLoop[loop]! += 1;
      }
    };
    const loops = [...Array.from({ length: 6 }, (_, i) => load(false, i)), load(true, 6), load(true, 7)];
    await until('some load before the kill', async () => receipts.length >= 3 || undefined);
    process.kill(victim, 'SIGKILL');
    killed = true;
    const replacement = await until('a replacement worker', async () => tree().find((pid) => !before.has(pid)));
    const settled = after.length;
    await until('requests after the replacement', async () => after.length >= settled + 50 || undefined);
    stop = true;
    await Promise.all(loops);
    t.ok(replacement, `worker ${victim} was replaced by ${replacement}`);
    // A client loses at most the request on its connection to the killed worker, and one on a new
    // connection the primary handed to it before it saw the worker die; the rest are answered.
    t.ok(
      failuresPerLoop.every((failures) => failures <= 2),
      `each client lost at most two requests (${failuresPerLoop.join(', ')})`,
    );
    t.ok(after.slice(settled).filter(Boolean).length >= 40, 'requests go on being answered after the replacement');
    t.match(server.stderr(), new RegExp(`worker ${victim} exited \\(SIGKILL\\); starting another`));
    const statuses = await Promise.all(receipts.map((hash) => fetch(`${base}/receipts/${hash}`).then((r) => r.status)));
    t.same(
      statuses.filter((status) => status !== 200),
      [],
      `all ${receipts.length} receipts of answered registrations are kept`,
    );
  });

  t.test('SIGTERM drains every worker and the primary exits 0', async (t) => {
    const workers = tree().filter((pid) => pid !== server.child.pid);
    t.equal(await server.stop('SIGTERM'), 0);
    // A worker may still be exiting as the primary's own exit is seen.
    await until('every worker gone', async () => (workers.some(alive) ? undefined : true));
    t.notOk(workers.some(alive), 'every worker is gone');
  });
});

t.test('gateway --workers 2 serves one port from two workers and drains on SIGTERM', async (t) => {
  const data = tempDir(t);
  // docs/scaling.md's command as written; the port, data directory and control plane it leaves to
  // its defaults come from the environment and a config file.
  const config = join(data, 'gateway.yaml');
  writeFileSync(config, 'port: 0\ncontrolPlane: http://127.0.0.1:9\n');
  const command = docCommand(
    'docs/scaling.md',
    'keyplane gateway --workers 2 --upstream http://127.0.0.1:3000 --client-id gw_…',
    { 'http://127.0.0.1:3000': 'http://127.0.0.1:9', 'gw_…': 'gw_workers', '…': 'secret-workers-0123456789' },
  );
  const gateway = await startCli(
    command.args,
    { ...command.env, KEYPLANE_DATA_DIR: data, KEYPLANE_CONFIG: config },
    180_000,
  );
  t.teardown(() => gateway.stop('SIGKILL'));
  const tree = () => processTree(gateway.child.pid!);
  t.equal(gateway.stdout().trim(), `listening ${gateway.url}`, 'one listening line');
  // New connections until both workers were seen (on a loaded machine one batch may not show both).
  const workers = new Set<number>();
  await until('both workers serve', async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, () => onNewConnection(`${gateway.url}/healthz`, tree)));
    t.ok(answers.every((a) => a.status === 200));
    // The primary holds a connection for a moment before handing it over: seen there, it says nothing.
    for (const { worker } of answers) if (worker !== undefined && worker !== gateway.child.pid) workers.add(worker);
    return workers.size >= 2 ? true : undefined;
  });
  t.equal(workers.size, 2, 'two processes serve');
  t.equal(await gateway.stop('SIGTERM'), 0);
  await until('every worker gone', async () => ([...workers].some(alive) ? undefined : true));
});
