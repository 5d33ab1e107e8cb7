import t from 'tap';
import { writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { hashReceipt } from '#lib/ledger/receipt.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import { TEST_MASTER_KEY, tempDir } from '../../helpers/build.js';
import { startCli, type Server } from '../../helpers/cli.js';
import { ADMIN } from '../../helpers/oidc.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';
import { until } from '../../helpers/until.js';

/**
 * Nothing lost: a real control plane (a child process) is killed with SIGKILL while webhook
 * deliveries are in flight (the receiver holds every request open) and more are queued; the
 * process started again on the same data dir delivers every one of them, once its dead
 * predecessor's leases run out (a minute).
 */

const env = { KEYPLANE_MASTER_KEY: TEST_MASTER_KEY, KEYPLANE_ADMIN_TOKEN: ADMIN };

async function post(base: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base, ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

async function signUp(base: string, username: string): Promise<string> {
  const authenticator = new SoftAuthenticator(base);
  const begin = await post(base, '/auth/registration-options', { username });
  const done = await post(base, '/auth/registration-verify', {
    user: username,
    response: authenticator.create(begin.json['options']),
    signupToken: begin.json['signupToken'],
  });
  if (done.status !== 200) throw new Error(`registration-verify: ${JSON.stringify(done.json)}`);
  return done.json['receipt'] as string;
}

// Child processes run TypeScript through tsx.
t.setTimeout(400_000);

t.test('webhook deliveries in flight and queued at a SIGKILL are all delivered after the restart', async (t) => {
  const tls = makeTestCa(t);
  let answering = false;
  const held: Array<() => void> = [];
  const delivered: Array<{ body: string; headers: Record<string, string> }> = [];
  const receiver = await startHttpsServer(t, tls, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (!answering) {
        // Mid-delivery: the request is held open until the process that sent it is dead.
        held.push(() => res.destroy());
        return;
      }
      delivered.push({ body, headers: req.headers as Record<string, string> });
      res.end();
    });
  });
  const receiverUrl = `${receiver.origin}/hook`;
  const dir = tempDir(t);
  const config = join(tempDir(t), 'keyplane.yaml');
  writeFileSync(
    config,
    [
      'limits:',
      '  authPerIpPerMinute: 1000000',
      '  authPerAccountPerMinute: 1000000',
      'fetch:',
      '  allowPrivateTargets: true',
      `  caFile: ${tls.caFile}`,
      'webhooks:',
      '  pollIntervalMs: 200',
      // The killed process's claims are sent again once their lease runs out.
      '  leaseMs: 5000',
      'logLevel: warn',
    ].join('\n'),
  );
  const args = ['control-plane', '--port', '0', '--data', dir, '--config', config];
  let server: Server | undefined = await startCli(args, env, 60_000);
  t.teardown(() => {
    held.forEach((release) => release());
    if (server && server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  });
  const base = server.url;
  const created = await post(
    base,
    '/admin/webhooks',
    { url: receiverUrl, events: ['account.created'] },
    { authorization: `Bearer ${ADMIN}` },
  );
  t.equal(created.status, 200, String(created.json['reason'] ?? 'created'));
  const secret = created.json['secret'] as string;

  const given: string[] = [];
  for (let i = 0; i < 8; i++) given.push(await signUp(base, `crash-hook-${i}`));
  await until('a delivery in flight', async () => (held.length > 0 ? true : undefined), 60_000);

  const exited = once(server.child, 'exit');
  server.child.kill('SIGKILL');
  await exited;
  held.forEach((release) => release());
  t.same(delivered, [], 'nothing was answered before the kill');

  answering = true;
  server = await startCli(args, env, 60_000);
  const byHash = await until(
    'every account.created delivered after the restart',
    async () => {
      const hashes = new Set(
        delivered.map((d) => hashReceipt((new Webhook(secret).verify(d.body, d.headers) as { data: unknown }).data)),
      );
      return given.every((hash) => hashes.has(hash)) ? hashes : undefined;
    },
    180_000,
  );
  t.equal(byHash.size, given.length, 'each of the receipts given out, verified with the secret');
  t.equal(await server.stop('SIGTERM'), 0, 'the restarted server stops cleanly');
  server = undefined;
});
