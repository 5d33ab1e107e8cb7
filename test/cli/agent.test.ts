import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { createHash } from 'node:crypto';
import { tempDir } from '../helpers/build.js';
import { CLI, childEnv, runCli } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { ADMIN, RESOURCE, registerClient } from '../helpers/oidc.js';
import { buildSignedIn } from '../helpers/signed-in.js';
import { until } from '../helpers/until.js';

// keygen, enroll (polling, progress on stderr) and a refusal with exit 1 and one with exit 2 run as
// real processes; the other commands run in-process through the same program.
t.setTimeout(600_000);

async function served(t: Parameters<typeof buildSignedIn>[0]) {
  const built = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const { browser } = await built.signIn({ username: 'ada', assurance: 'passkey' });
  const { browser: strong } = await built.signIn({ username: 'ada', assurance: 'sensitive' });
  await built.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = built.app.server.address() as { port: number };
  return { ...built, browser, strong, url: `http://127.0.0.1:${port}` };
}

/** Runs `keyplane agent enroll` and calls `onCode` with the owner code and enrollment id as soon as it prints them. */
async function enrollWhile(args: string[], onCode: (code: string, stderr: () => string) => Promise<void>) {
  const child = spawn(process.execPath, [...CLI, 'agent', 'enroll', ...args], {
    env: childEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = once(child, 'exit');
  const code = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      stdout += d;
      const match = /owner code: (\S+)/.exec(stdout);
      if (match) resolve(match[1]!);
    });
    void exited.then(() => reject(new Error(`enroll exited early: ${stderr}`)));
  });
  await onCode(code, () => stderr);
  const [exit] = (await exited) as [number | null];
  return { code: exit, stdout, stderr };
}

t.test('keyplane agent: keygen, enroll with the owner approving over HTTP, status, prove, run and token', async (t) => {
  const { url, browser, strong, app, services } = await served(t);
  const dir = tempDir(t, 'keyplane-agent-cli-');
  const key = join(dir, 'agent.jwk');

  const keygen = await runCli(['agent', 'keygen', '--key', key]);
  t.equal(keygen.code, 0, keygen.stderr);
  t.equal(statSync(key).mode & 0o777, 0o600, 'the private key file is 0600');
  const jwk = JSON.parse(readFileSync(key, 'utf8'));
  t.match(jwk, { kty: 'EC', crv: 'P-256', d: /./ });
  t.match(
    keygen.stdout,
    /^public key: \{"kty":"EC","crv":"P-256","x":"[^"]+","y":"[^"]+"\}\nthumbprint \(jkt\): [A-Za-z0-9_-]{43}\n$/,
  );
  t.notMatch(keygen.stdout, jwk.d, 'the private part is never printed');
  t.equal((await runInProcess(['agent', 'keygen', '--key', key])).code, 2, 'an existing key is not overwritten');

  const enrolled = await enrollWhile(
    ['--key', key, '--control-plane', url, '--name', 'CLI bot', '--visibility', 'public', '--interval', '0.2'],
    async (code, stderr) => {
      // The CLI is polling; wait for it to say so before the owner approves.
      await until('the CLI saying it waits for approval', async () => /pending_approval/.test(stderr()) || undefined);
      const pending = (await services.storage.agents.listByOwner('usr_ada')).length;
      t.equal(pending, 0, 'no agent before approval');
      const enrollmentId = JSON.parse(readFileSync(`${key}.agent.json`, 'utf8')).enrollment_id;
      const approved = await browser.post('/auth/agents/proof/enroll/approve', {
        enrollment_id: enrollmentId,
        owner_code: code,
      });
      t.equal(approved.statusCode, 200, approved.body);
    },
  );
  t.equal(enrolled.code, 0, enrolled.stderr);
  t.match(
    enrolled.stdout,
    /owner code: [A-Z2-9]{4}-[A-Z2-9]{4}\nthe owner approves at http:\/\/localhost:4400\/account\/agents/,
  );
  t.match(enrolled.stderr, /enrollment aen_\S+: pending_approval \(\d+:\d\d left\)/);
  t.match(enrolled.stderr, /: approved/);
  const agentId = /agent_id: (agt_\S+)/.exec(enrolled.stdout)?.[1];
  t.ok(agentId, enrolled.stdout);
  t.match(enrolled.stdout, /proof_url: http:\/\/localhost:4400\/agent\/\S+/);
  const stored = await services.storage.agents.get(agentId!);
  t.equal(stored?.state, 'active');

  const status = await runInProcess(['agent', 'status', '--key', key, '--json']);
  t.equal(status.code, 0, status.stderr);
  t.match(JSON.parse(status.stdout), {
    ok: true,
    agent_id: agentId,
    state: 'active',
    claims: { key_control: { status: 'verified' } },
  });

  const proved = await runInProcess(['agent', 'prove', '--key', key, '--audience', 'https://verifier.example.com']);
  t.equal(proved.code, 0, proved.stderr);
  const proofToken = proved.stdout.trim();
  t.equal(decodeProtectedHeader(proofToken).typ, 'agent-proof+jwt');
  t.match(decodeJwt(proofToken), { sub: agentId, aud: 'https://verifier.example.com', cnf: { jkt: stored!.jkt } });

  const task = join(dir, 'task.txt');
  writeFileSync(task, 'summarise the quarterly report');
  const run = await runInProcess([
    'agent',
    'prove',
    '--key',
    key,
    '--run',
    '--task',
    task,
    '--input-commitment',
    'a'.repeat(64),
    '--output-commitment',
    'b'.repeat(64),
    '--json',
  ]);
  t.equal(run.code, 0, run.stderr);
  const ran = JSON.parse(run.stdout);
  t.equal(ran.run_proof.task_commitment, createHash('sha256').update('summarise the quarterly report').digest('hex'));
  t.equal(decodeProtectedHeader(ran.token).typ, 'agent-run+jwt');
  t.match(decodeJwt(ran.token), { sub: agentId, run_proof_hash: /^[0-9a-f]{64}$/ });
  t.ok(ran.expires_in <= 300);

  const client = await registerClient(app, { access: { humans: false, agents: true }, scope: 'openid read write' });
  const noGrant = await runInProcess(
    ['agent', 'token', '--key', key, '--client-id', client.client_id, '--resource', RESOURCE, '--json'],
    { KEYPLANE_CLIENT_SECRET: client.client_secret! },
  );
  t.equal(noGrant.code, 1, 'refused before the owner approves a grant');
  t.equal(JSON.parse(noGrant.stdout).error, 'invalid_grant');
  const grant = await strong.post('/auth/agents/proof/grants', {
    agent_id: agentId,
    client_id: client.client_id,
    resource: RESOURCE,
    scope: 'read',
  });
  t.equal(grant.statusCode, 200, grant.body);
  const tok = await runInProcess(
    ['agent', 'token', '--key', key, '--client-id', client.client_id, '--resource', RESOURCE, '--json'],
    { KEYPLANE_CLIENT_SECRET: client.client_secret! },
  );
  t.equal(tok.code, 0, tok.stderr);
  const issued = JSON.parse(tok.stdout);
  t.equal(issued.token_type, 'DPoP');
  t.type(issued.expires_in, 'number');
  t.match(decodeJwt(issued.access_token), {
    sub: agentId,
    scope: 'read',
    cnf: { jkt: stored!.jkt },
    svc: { principal: { type: 'agent', id: agentId } },
  });

  // Once suspended, proofs are refused: exit 1 with the envelope.
  await browser.post('/auth/agents/proof/lifecycle', { agent_id: agentId, action: 'suspend' });
  const refused = await runCli(['agent', 'prove', '--key', key, '--json']);
  t.equal(refused.code, 1);
  t.match(JSON.parse(refused.stdout), { ok: false, reason: 'agent_state' });
});

t.test('keyplane agent exits 2 on usage and network errors and refuses a key file others can read', async (t) => {
  const dir = tempDir(t, 'keyplane-agent-cli-');
  const key = join(dir, 'ed.jwk');
  const keygen = await runInProcess(['agent', 'keygen', '--key', key, '--alg', 'EdDSA', '--json']);
  t.equal(keygen.code, 0, keygen.stderr);
  t.match(JSON.parse(keygen.stdout), { ok: true, alg: 'EdDSA', publicJwk: { kty: 'OKP', crv: 'Ed25519' } });
  t.equal(
    (await runInProcess(['agent', 'keygen', '--key', join(dir, 'x.jwk'), '--alg', 'RS256'])).code,
    2,
    'an unsupported algorithm',
  );
  t.equal(
    (await runInProcess(['agent', 'enroll', '--control-plane', 'http://127.0.0.1:1', '--name', 'x'])).code,
    2,
    'no --key',
  );
  t.equal(
    (await runInProcess(['agent', 'enroll', '--key', key, '--control-plane', 'http://127.0.0.1:1', '--name', 'x']))
      .code,
    2,
    'unreachable',
  );
  t.equal((await runInProcess(['agent', 'prove', '--key', key])).code, 2, 'not enrolled');
  chmodSync(key, 0o644);
  const open = await runCli(['agent', 'enroll', '--key', key, '--control-plane', 'http://127.0.0.1:1', '--name', 'x']);
  t.equal(open.code, 2);
  t.match(open.stderr, /readable by others/);
});
