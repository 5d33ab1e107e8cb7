import t from 'tap';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runProgram } from '../../cli/src/program.js';
import { tempDir } from '../helpers/build.js';
import { decodeEntities } from '../helpers/oidc.js';
import { passkeySignUp, register, start, type CookieJar } from '../helpers/openid-client.js';

/**
 * `keyplane login` against a real control plane: the CLI prints where to approve, the operator
 * approves (or declines) on the verification page with a passkey session, and the CLI, which
 * has been polling, writes its tokens to a file only its owner can read.
 */
const DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code';

async function decide(base: string, jar: CookieJar, userCode: string, decision: 'allow' | 'deny'): Promise<void> {
  const post = (path: string, form: Record<string, string>) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { cookie: jar.header(), origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
  const shown = await (await post('/device', { user_code: userCode })).text();
  const approval = /name="approval" value="([^"]+)"/.exec(shown)![1]!;
  await post('/device/approve', { approval: decodeEntities(approval), decision });
}

/** Runs `keyplane login …`, deciding at the page as soon as the CLI prints its code. */
async function login(args: string[], onCode: (code: string) => Promise<void>) {
  let stdout = '';
  let stderr = '';
  let decided: Promise<void> | undefined;
  const code = await runProgram(['login', ...args], {
    stdout: (text) => void (stdout += text),
    stderr: (text) => {
      stderr += text;
      const match = /the code ([A-Z]{4}-[A-Z]{4})/.exec(text);
      if (match && !decided) decided = onCode(match[1]!);
    },
  });
  await decided;
  return { code, stdout, stderr };
}

t.test('keyplane login signs the CLI in through the device grant', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'operator-olga');
  const cli = await register(base, {
    client_name: 'Keyplane CLI',
    redirect_uris: undefined,
    post_logout_redirect_uris: undefined,
    grant_types: [DEVICE_CODE, 'refresh_token'],
    resources: [],
    token_endpoint_auth_method: 'none',
  });
  const credentials = join(tempDir(t), 'nested', 'credentials.json');
  const args = ['--control-plane', base, '--client-id', cli.client_id, '--credentials', credentials];

  const done = await login(args, (code) => decide(base, jar, code, 'allow'));
  t.equal(done.code, 0, done.stderr);
  t.match(done.stderr, `${base}/device?user_code=`);
  t.match(done.stdout, /^signed in as operator-olga \(usr_[^)]+\) at passkey; tokens in /);
  t.equal(statSync(credentials).mode & 0o777, 0o600, 'readable by its owner only');
  const saved = JSON.parse(readFileSync(credentials, 'utf8'));
  t.match(saved, { issuer: base, client_id: cli.client_id, access_token: /\./, refresh_token: /.+/, id_token: /\./ });

  const declined = await login(args, (code) => decide(base, jar, code, 'deny'));
  t.equal(declined.code, 1);
  t.match(declined.stderr, 'the sign-in was declined');

  const unknown = await runProgram(['login', '--control-plane', base, '--client-id', 'cl_nope'], {
    stdout: () => undefined,
    stderr: () => undefined,
  });
  t.equal(unknown, 1, 'a client the server does not know is refused');
});
