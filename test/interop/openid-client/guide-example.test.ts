import t from 'tap';
import { execFile } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findFreePort } from '#lib/runtime/listen.js';
import { tempDir } from '../../helpers/build.js';
import { startListening } from '../../helpers/cli.js';
import { codeBlocksUnder } from '../../helpers/doc-blocks.js';
import { LIVE_ADMIN, LiveBrowser, startLiveControlPlane } from '../../helpers/live-browser.js';

/**
 * docs/oidc.md §0 as a reader follows it: the registration commands and app.mjs are taken from the
 * guide, the app runs as its own Node.js process with the packages the guide installs, and a
 * browser signs in through it. Only the two local URLs are swapped for the test's free ports.
 */
const GUIDE = 'docs/oidc.md';
const [startBlock, registerBlock, appBlock, runBlock] = codeBlocksUnder(
  GUIDE,
  '0. Quick start with openid-client (Node.js)',
);

t.test(
  'the quick start installs only what the test suite has, and starts Keyplane with an operator token',
  async (t) => {
    t.match(startBlock!.text, /export KEYPLANE_ADMIN_TOKEN=.*\nnpm start\n/);
    const install = registerBlock!.text.split('\n')[0]!;
    t.equal(install, 'npm init -y && npm install openid-client express express-session');
    const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as Record<
      'dependencies' | 'devDependencies',
      Record<string, string>
    >;
    // openid-client is also Keyplane's own (connections to upstream identity providers).
    for (const name of install.split('npm install ')[1]!.split(' '))
      t.ok(manifest.devDependencies[name] ?? manifest.dependencies[name], `${name} is installed for this test`);
  },
);

t.test(
  "docs/oidc.md's openid-client example signs in, reads userinfo and signs out against the local try-out",
  async (t) => {
    const server = await startLiveControlPlane(t);
    const issuer = server.url;
    const appPort = await findFreePort();
    const appUrl = `http://localhost:${appPort}`;
    const local = (text: string) =>
      text.replaceAll('http://localhost:4400', issuer).replaceAll('http://localhost:3000', appUrl);
    const dir = tempDir(t, 'keyplane-oidc-guide-');
    symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'node_modules'));

    // The registration, as the guide runs it (the npm line is what the symlinked node_modules stands for).
    const register = registerBlock!.text.split('\n').slice(1).join('\n');
    // Asynchronously: the control plane answering curl runs in this process.
    const shell = await promisify(execFile)(
      'sh',
      ['-ec', `${local(register)}\nprintf '%s %s' "$CLIENT_ID" "$CLIENT_SECRET"`],
      { cwd: dir, env: { ...process.env, KEYPLANE_ADMIN_TOKEN: LIVE_ADMIN } },
    );
    const [clientId, clientSecret] = shell.stdout.split(' ');
    t.match(clientId, /^cl_/);

    writeFileSync(join(dir, 'app.mjs'), appBlock!.text);
    t.equal(appBlock!.lang, 'js');
    t.match(runBlock!.text, /node app\.mjs\n$/);
    const app = await startListening('bash', ['-c', runBlock!.text.trim()], {
      cwd: dir,
      env: { CLIENT_ID: clientId, CLIENT_SECRET: clientSecret, ISSUER: issuer, APP_URL: appUrl, PORT: String(appPort) },
    });
    t.teardown(() => app.stop());
    t.equal(app.url, `${appUrl}/`);

    const browser = new LiveBrowser(issuer);
    t.match((await browser.navigate(`${appUrl}/`)).body, '<a href="/login">Sign in</a>', 'signed out at first');
    await browser.signUp('guide-reader');

    const login = await browser.request(`${appUrl}/login`);
    t.equal(login.status, 302);
    t.ok(login.headers.get('location')!.startsWith(`${issuer}/auth/authorize?`));
    const sessionCookie = login.headers.getSetCookie().find((line) => line.startsWith('connect.sid='));
    t.ok(sessionCookie, 'express-session set its cookie');
    t.notMatch(sessionCookie!, /;\s*Secure/i, 'not Secure on http, so the browser keeps it');

    const home = await browser.navigate(login.headers.get('location')!);
    t.equal(home.url, `${appUrl}/`, 'the callback lands on the app\'s "/"');
    t.match(home.body, /Signed in as \S+ \(assurance passkey\)/);

    const me = await browser.request(`${appUrl}/me`);
    t.equal(me.status, 200);
    t.match(JSON.parse(me.body), { preferred_username: 'guide-reader' });

    const logout = await browser.request(`${appUrl}/logout`, { method: 'POST' });
    t.equal(logout.status, 302);
    t.ok(logout.headers.get('location')!.startsWith(`${issuer}/auth/logout?`));
    const after = await browser.navigate(logout.headers.get('location')!);
    t.equal(after.url, `${appUrl}/?state=bye`);
    t.match(after.body, 'Sign in', 'signed out of the app');
    t.notMatch(app.stderr(), /Error/, 'the app logged no error');
  },
);
