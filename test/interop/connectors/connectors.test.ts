import t from 'tap';
import type { Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as client from 'openid-client';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { LIVE_ADMIN, LiveBrowser, startLiveControlPlane } from '../../helpers/live-browser.js';

/**
 * Connectors against real parts. Apache httpd with Debian's mod_auth_openidc runs the snippet
 * the apache connector produced (own ServerRoot, ephemeral port, foreground) and headless
 * Chromium signs in through Keyplane with a virtual authenticator until the protected CGI page
 * shows the OIDC claims. openid-client runs the full code flow with the registrations other
 * connectors produced (basic, post and public clients).
 */
const APACHE = '/usr/sbin/apache2';
const MODULES = '/usr/lib/apache2/modules';
const REQUIRE_ALL = process.env['KEYPLANE_REQUIRE_ALL'] === '1';

function apacheSkip(): string | false {
  if (existsSync(APACHE) && existsSync(`${MODULES}/mod_auth_openidc.so`)) return false;
  if (REQUIRE_ALL) {
    t.fail(
      'apache2 with mod_auth_openidc is required (KEYPLANE_REQUIRE_ALL=1): apt-get install apache2 libapache2-mod-auth-openidc',
    );
    return false;
  }
  return 'apache2 or mod_auth_openidc missing (apt-get install apache2 libapache2-mod-auth-openidc)';
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function connector(issuer: string, name: string, inputs: Record<string, string>): Promise<Record<string, any>> {
  const res = await fetch(`${issuer}/connectors/${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${LIVE_ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(inputs),
  });
  if (res.status !== 201) throw new Error(`connector ${name}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<Record<string, any>>;
}

/** Apache in the foreground with the connector's directives and a CGI page that prints the claims. */
async function startApache(t: Test, port: number, snippet: string): Promise<{ log: () => string }> {
  const dir = mkdtempSync(join(tmpdir(), 'kp-apache-'));
  mkdirSync(join(dir, 'cgi-bin'));
  mkdirSync(join(dir, 'htdocs'));
  writeFileSync(
    join(dir, 'cgi-bin', 'claims'),
    `#!/bin/sh
printf 'Content-Type: text/plain\\r\\n\\r\\n'
printf 'REMOTE_USER=%s\\n' "$REMOTE_USER"
env | grep '^OIDC_CLAIM_' | sort
`,
  );
  chmodSync(join(dir, 'cgi-bin', 'claims'), 0o755);
  // Apache drops root to `nobody` for its children; they must read the tree.
  chmodSync(dir, 0o755);
  const conf = `ServerRoot ${dir}
ServerName localhost
Listen 127.0.0.1:${port}
PidFile ${dir}/httpd.pid
ErrorLog ${dir}/error.log
LogLevel warn auth_openidc:info
DocumentRoot ${dir}/htdocs
LoadModule mpm_prefork_module ${MODULES}/mod_mpm_prefork.so
LoadModule authz_core_module ${MODULES}/mod_authz_core.so
LoadModule authz_user_module ${MODULES}/mod_authz_user.so
LoadModule authn_core_module ${MODULES}/mod_authn_core.so
LoadModule alias_module ${MODULES}/mod_alias.so
LoadModule cgi_module ${MODULES}/mod_cgi.so
LoadModule auth_openidc_module ${MODULES}/mod_auth_openidc.so
${process.getuid?.() === 0 ? 'User nobody\nGroup nogroup\n' : ''}StartServers 1
MinSpareServers 1
MaxSpareServers 2
ScriptAlias /claims ${dir}/cgi-bin/claims
${snippet}`;
  writeFileSync(join(dir, 'httpd.conf'), conf);
  // Its own process group: prefork stops its children by signalling the whole group.
  const child: ChildProcess = spawn(APACHE, ['-f', join(dir, 'httpd.conf'), '-DFOREGROUND'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  t.teardown(async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const log = () =>
    `${output}\n${existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : ''}`;
  // Up when the port answers (a 302 to Keyplane from the protected location).
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`apache exited: ${log()}`);
    try {
      await fetch(`http://127.0.0.1:${port}/`, { redirect: 'manual' });
      return { log };
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`apache did not start: ${log()}`);
}

const browserSkip = chromiumSkip(t, 'mod_auth_openidc browser suite');
const skipApache = browserSkip || apacheSkip();

t.test(
  'Apache mod_auth_openidc with the connector snippet: Chromium signs in through Keyplane and sees the claims',
  { skip: skipApache },
  async (t) => {
    const server = await startLiveControlPlane(t);
    const port = await freePort();
    const base = `http://localhost:${port}`;
    const made = await connector(server.url, 'apache', { base_url: base });
    t.equal(made.snippet.format, 'apache');
    t.same(made.client.redirect_uris, [`${base}/redirect_uri`]);
    const apache = await startApache(t, port, made.snippet.content);

    const { page, problems, addAuthenticator } = await launchChromium(t, { expectedFailures: ['/favicon.ico'] });
    await addAuthenticator();
    await page.goto(`${base}/claims`);
    await page
      .waitForURL((url) => url.origin === server.url && url.pathname === '/auth', { timeout: 30_000 })
      .catch((error) => {
        throw new Error(
          `not at Keyplane's sign-in page: ${page.url()} ${problems.join(' | ')} ${apache.log()} ${error}`,
        );
      });
    await page.fill('input[name="username"]', 'mellon-free');
    await page.click('button[data-action="signup"]');
    await page.waitForSelector('form[data-action="continue"]', { timeout: 30_000 });
    t.match(await page.textContent('h1'), /Apache at localhost/);
    await Promise.all([
      page
        .waitForURL((url) => url.href === `${base}/claims`, { timeout: 30_000 })
        .catch(async (error) => {
          throw new Error(
            `not back at the protected page: ${page.url()} ${(await page.textContent('body').catch(() => ''))?.slice(0, 300)} ${problems.join(' | ')} ${apache.log()} ${error}`,
          );
        }),
      page.click('form[data-action="continue"] button[value="allow"]'),
    ]);
    const text = (await page.textContent('body')) ?? '';
    const claims = Object.fromEntries(
      text
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    t.match(claims['OIDC_CLAIM_sub'], /^usr_/, `mod_auth_openidc passed the sub claim: ${text}`);
    t.equal(claims['REMOTE_USER'], claims['OIDC_CLAIM_sub'], 'OIDCRemoteUserClaim sub');
    t.equal(claims['OIDC_CLAIM_iss'], server.url);
    t.equal(claims['OIDC_CLAIM_aud'], made.client.client_id);
    t.equal(claims['OIDC_CLAIM_preferred_username'], 'mellon-free');
    t.equal(claims['OIDC_CLAIM_acr'], 'passkey');
    t.notOk('OIDC_CLAIM_ok' in claims, 'userinfo carries claims only: no envelope member becomes a claim');

    // A second visit rides on mod_auth_openidc's session: no trip to Keyplane.
    const again = await page.goto(`${base}/claims`);
    t.equal(again?.status(), 200);
    t.equal(new URL(page.url()).origin, base);

    // The same person, signed in at Keyplane, connects another tool from /apps in the browser.
    await page.goto(`${server.url}/apps`);
    await page.selectOption('#connector', 'grafana');
    await page.fill('#connector_base_url', 'https://grafana.example.com');
    await Promise.all([
      page.waitForSelector('[data-snippet="grafana"]', { timeout: 30_000 }),
      page.click('form[action="/apps/connectors"] button[type="submit"]'),
    ]);
    const snippet = (await page.textContent('[data-snippet="grafana"]')) ?? '';
    t.match(
      snippet,
      /\[auth\.generic_oauth\][\s\S]*client_id = cl_[\s\S]*use_pkce = true/,
      'the page shows the filled-in grafana.ini',
    );
    t.match(await page.textContent('[role="status"] h2'), /Grafana connected/);
    t.ok(
      await page.isVisible('text=Copy configuration'),
      'the module script ran under the strict CSP and added the copy button',
    );
    t.same(
      problems.filter((p) => p.startsWith('pageerror') || p.startsWith('console')),
      [],
      'no script errors or CSP violations',
    );
  },
);

t.test('openid-client runs the full code flow with the registrations connectors produced', async (t) => {
  const server = await startLiveControlPlane(t);
  const browser = new LiveBrowser(server.url);
  await browser.signUp('connector-rp');
  const cases: [string, Record<string, string>, (secret: string) => client.ClientAuth][] = [
    ['grafana', { base_url: 'http://localhost:9' }, (secret) => client.ClientSecretBasic(secret)],
    ['nextcloud', { base_url: 'http://localhost:9' }, (secret) => client.ClientSecretPost(secret)],
    ['outline', { base_url: 'http://localhost:9' }, (secret) => client.ClientSecretPost(secret)],
  ];
  for (const [name, inputs, auth] of cases) {
    const made = await connector(server.url, name, inputs);
    const registration = made.client;
    const redirect = registration.redirect_uris[0] as string;
    const config = await client.discovery(
      new URL(server.url),
      registration.client_id,
      undefined,
      auth(registration.client_secret),
      { execute: [client.allowInsecureRequests] },
    );
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirect,
      scope: registration.scope,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const landed = await browser.navigate(url.href, { stopAt: redirect });
    t.equal(landed.status, 0, `${name}: back at ${redirect}`);
    const tokens = await client.authorizationCodeGrant(config, new URL(landed.url), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    t.equal(claims.aud, registration.client_id, `${name}: ID token for the connector's client`);
    t.match(claims.sub, /^usr_/);
    const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    t.equal(info.preferred_username, 'connector-rp', `${name}: userinfo`);
    if (registration.grant_types.includes('refresh_token')) {
      t.ok(tokens.refresh_token, `${name}: a refresh token, as the tool expects`);
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
      t.equal(refreshed.claims()?.sub ?? claims.sub, claims.sub);
    }
  }
});

t.test("kubelogin's public client: a loopback redirect without a path, PKCE, no secret, a refresh token", async (t) => {
  const server = await startLiveControlPlane(t);
  const browser = new LiveBrowser(server.url);
  await browser.signUp('kube-user');
  const made = await connector(server.url, 'kubelogin', {});
  const clientId = made.client.client_id as string;
  // openid-client derives redirect_uri from the callback URL (adding a slash), so this exchange
  // is done as kubelogin does it: the redirect URI exactly as it listens, http://localhost:8000.
  const redirect = 'http://localhost:8000';
  const verifier = client.randomPKCECodeVerifier();
  const authorize = `${server.url}/auth/authorize?${new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirect,
    response_type: 'code',
    scope: made.client.scope,
    state: 'kube-state',
    nonce: 'kube-nonce',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  })}`;
  const landed = await browser.navigate(authorize, { stopAt: redirect });
  const code = new URL(landed.url).searchParams.get('code');
  t.match(code, /^[A-Za-z0-9_-]{43}$/);
  const res = await fetch(`${server.url}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: code!,
      redirect_uri: redirect,
      client_id: clientId,
      code_verifier: verifier,
    }),
  });
  const tokens = (await res.json()) as Record<string, string>;
  t.equal(res.status, 200, JSON.stringify(tokens));
  t.type(tokens.id_token, 'string', 'an ID token for the API server');
  t.type(tokens.refresh_token, 'string', 'offline_access: kubelogin refreshes without a browser');
  const payload = JSON.parse(Buffer.from(tokens.id_token!.split('.')[1]!, 'base64url').toString()) as Record<
    string,
    unknown
  >;
  t.match(payload, { iss: server.url, aud: clientId, nonce: 'kube-nonce', sub: /^usr_/ });
});
