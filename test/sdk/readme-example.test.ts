import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findFreePort } from '#lib/runtime/listen.js';
import { tempDir } from '../helpers/build.js';
import { startListening } from '../helpers/cli.js';
import { codeBlocksUnder } from '../helpers/doc-blocks.js';
import { LIVE_ADMIN, LiveBrowser, startLiveControlPlane } from '../helpers/live-browser.js';

/**
 * sdk/README.md as a reader follows it: the checkout packs the SDK, the tarball is installed in a
 * fresh app directory, the app registers and runs the README's app.mjs as its own process, and a
 * browser signs in and steps up through it. npm's install is the one step done by hand (unpacking
 * the tarball where npm would, its dependencies linked from this checkout), so the test needs no
 * registry.
 */
const sh = promisify(execFile);
const [packBlock, installBlock, registerBlock, appBlock, runBlock] = codeBlocksUnder(
  'sdk/README.md',
  'From install to a protected route',
);

t.test("the README's install, registration and app.mjs sign a browser in and step it up", async (t) => {
  const sdk = JSON.parse(readFileSync('sdk/package.json', 'utf8')) as {
    version: string;
    dependencies: Record<string, string>;
  };
  const tarball = `dist/keyplane-sdk-${sdk.version}.tgz`;

  t.equal(packBlock!.text, 'npm run pack:sdk\n');
  const packed = await sh('sh', ['-ec', packBlock!.text]);
  t.match(packed.stdout, `keyplane-sdk-${sdk.version}.tgz`, 'npm pack names the tarball');

  t.equal(installBlock!.text, `npm init -y && npm install /path/to/keyplane/${tarball} fastify\n`);
  const dir = tempDir(t, 'keyplane-sdk-readme-');
  const installed = join(dir, 'node_modules/@keyplane/sdk');
  mkdirSync(installed, { recursive: true });
  await sh('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
  for (const name of [...Object.keys(sdk.dependencies), 'fastify'])
    symlinkSync(join(process.cwd(), 'node_modules', name), join(dir, 'node_modules', name));

  const server = await startLiveControlPlane(t);
  const issuer = server.url;
  const appPort = await findFreePort();
  const appUrl = `http://127.0.0.1:${appPort}`;
  const register = registerBlock!.text
    .replaceAll('http://localhost:4400', issuer)
    .replaceAll('http://127.0.0.1:3000', appUrl);
  // Asynchronously: the control plane answering curl runs in this process.
  const registered = await sh('sh', ['-ec', `${register}\nprintf '%s %s' "$CLIENT_ID" "$CLIENT_SECRET"`], {
    cwd: dir,
    env: { ...process.env, KEYPLANE_ADMIN_TOKEN: LIVE_ADMIN },
  });
  const [clientId, clientSecret] = registered.stdout.split(' ');
  t.match(clientId, /^cl_/);

  writeFileSync(join(dir, 'app.mjs'), appBlock!.text);
  t.match(runBlock!.text, /node app\.mjs\n$/);
  const app = await startListening('bash', ['-c', runBlock!.text.trim()], {
    cwd: dir,
    env: {
      KEYPLANE_ISSUER: issuer,
      CLIENT_ID: clientId,
      CLIENT_SECRET: clientSecret,
      REDIRECT_URI: `${appUrl}/callback`,
      PORT: String(appPort),
    },
  });
  t.teardown(() => app.stop());
  t.equal(app.url, appUrl);

  const browser = new LiveBrowser(issuer);
  await browser.signUp('sdk-reader');
  const notes = await browser.navigate(`${appUrl}/notes`);
  t.equal(notes.url, `${appUrl}/notes`, 'back on /notes after signing in');
  t.match(JSON.parse(notes.body), { hello: /^\S+$/ });
  const admin = await browser.navigate(`${appUrl}/admin`);
  t.equal(admin.url, `${appUrl}/admin`, 'back on /admin after the step-up');
  t.same(JSON.parse(admin.body), { admin: true });
});
