import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { symlinkSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { tempDir } from '../helpers/build.js';
import { CLI, childEnv } from '../helpers/cli.js';
import { codeBlocksUnder } from '../helpers/doc-blocks.js';
import { docCommand } from '../helpers/doc-examples.js';
import { LIVE_ADMIN, LiveBrowser, startLiveControlPlane } from '../helpers/live-browser.js';
import { until } from '../helpers/own-process.js';

/**
 * docs/agents.md "With the CLI" as its readers run it: the guide's own shell blocks, with
 * `keyplane` being this checkout's CLI, against a real control plane. The owner's approval is
 * what the /account/agents page posts (the page itself is tested in Chromium); the walk-through
 * must end in a DPoP-bound agent access token.
 */
const [enrollBlock, , registerBlock, grantBlock, tokenBlock] = codeBlocksUnder('docs/agents.md', 'With the CLI');

t.test("docs/agents.md's walk-through ends in an agent's access token", { timeout: 180_000 }, async (t) => {
  const server = await startLiveControlPlane(t);
  const issuer = server.url;
  const dir = tempDir(t, 'keyplane-agent-guide-');
  symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'node_modules'));
  const cli = CLI.map((arg) => (arg.endsWith('.ts') || arg.endsWith('.js') ? join(process.cwd(), arg) : arg));
  t.ok(cli.every((arg) => !arg.includes('/') || isAbsolute(arg)));
  const preamble = `keyplane() { "${process.execPath}" ${cli.map((arg) => `'${arg}'`).join(' ')} "$@"; }\n`;
  const local = (text: string) => text.replaceAll('http://localhost:4400', issuer);
  const shell = (script: string) => {
    const child = spawn('sh', ['-ec', preamble + local(script)], {
      cwd: dir,
      env: childEnv({ KEYPLANE_ADMIN_TOKEN: LIVE_ADMIN }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    t.teardown(() => void child.kill('SIGKILL'));
    return {
      stdout: () => stdout,
      exited: once(child, 'exit').then(([code]) => ({ code: code as number | null, stdout, stderr })),
    };
  };

  // 1. keygen and enroll: the id and the owner code are on stdout while enroll waits.
  t.match(enrollBlock!.text, /^keyplane agent keygen --key agent\.jwk\nkeyplane agent enroll /);
  const enroll = shell(enrollBlock!.text);
  const printed = await until(
    'enroll prints the enrollment id and owner code',
    async () => /^enrollment id: (aen_\S+)\nowner code: (\S+)$/m.exec(enroll.stdout()) ?? undefined,
    90_000,
  );
  const [, enrollmentId, ownerCode] = printed;
  t.match(enroll.stdout(), `the owner approves at ${issuer}/account/agents?enrollment=${enrollmentId} `);

  // 2. The owner approves, as the page's form does.
  const owner = new LiveBrowser(issuer);
  await owner.signUp('agent-owner');
  await owner.postJson(`${issuer}/auth/agents/proof/enroll/approve`, {
    enrollment_id: enrollmentId,
    owner_code: ownerCode,
  });
  const enrolled = await enroll.exited;
  t.equal(enrolled.code, 0, enrolled.stderr);
  const agentId = /^agent_id: (agt_\S+)$/m.exec(enrolled.stdout)?.[1];
  t.ok(agentId, 'enroll completes and prints the agent id');

  // 3 to 5. Register an app that admits agents, approve a grant, get the token: one shell, as a reader's.
  const rest = await shell([registerBlock!.text, grantBlock!.text, tokenBlock!.text].join('')).exited;
  t.equal(rest.code, 0, rest.stderr);
  const lines = rest.stdout.trimEnd().split('\n');
  t.match(lines[0], /^grant_id: agg_/);
  t.match(lines[1], /^next: keyplane agent token --key agent\.jwk --client-id cl_/);
  const claims = decodeJwt(lines.at(-1)!);
  t.match(claims, {
    sub: agentId,
    scope: 'notes:read',
    cnf: { jkt: /\S+/ },
    svc: { principal: { type: 'agent', id: agentId } },
  });
  t.match(rest.stderr, /DPoP token for agt_\S+, scope notes:read/);

  // The commands the guide names beside these, as it writes them, with the files `prove --run` hashes.
  for (const [name, text] of [
    ['task.txt', 'summarise the notes'],
    ['in.json', '{"notes":3}'],
    ['out.json', '{"summary":"three notes"}'],
  ])
    writeFileSync(join(dir, name!), text!);
  const status = await shell(docCommand('docs/agents.md', 'keyplane agent status --key agent.jwk').shell).exited;
  t.equal(status.code, 0, status.stderr);
  t.match(status.stdout, agentId!, 'status names the agent');
  const proof = await shell(
    docCommand('docs/agents.md', 'keyplane agent prove --key agent.jwk --audience https://verifier.example.com').shell,
  ).exited;
  t.equal(proof.code, 0, proof.stderr);
  t.equal(decodeProtectedHeader(proof.stdout.trim()).typ, 'agent-proof+jwt');
  const run = await shell(
    docCommand(
      'docs/agents.md',
      'keyplane agent prove --key agent.jwk --run --task task.txt --input in.json --output out.json',
    ).shell,
  ).exited;
  t.equal(run.code, 0, run.stderr);
  t.equal(decodeProtectedHeader(run.stdout.trim()).typ, 'agent-run+jwt');

  // What an RFC 7591 client sends without Keyplane's access member is refused, naming what is missing.
  const bare = await fetch(`${issuer}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${LIVE_ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      redirect_uris: ['http://localhost:3000/callback'],
      grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:jwt-bearer'],
    }),
  });
  t.equal(bare.status, 400);
  t.match(await bare.json(), { error: 'invalid_client_metadata', error_description: /"agents": true/ });
});
