import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { chromium } from 'playwright-core';
import { loadControlPlaneConfig } from '#config/load.js';
import type { ControlPlaneConfig } from '#config/types.js';
import { buildControlPlane } from '../../../control-plane/src/app.js';
import { openControlPlaneServices } from '../../../control-plane/src/services.js';
import { CHROMIUM, PLATFORM_AUTHENTICATOR, chromiumSkip } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';

/**
 * The direct grant in Debian's Chromium with the CDP virtual authenticator on the RP's origin.
 * WebAuthn related origins are https-only, so both servers run TLS with a test CA made here
 * (openssl), trusted through an NSS database in the browser's own HOME (certutil); host names
 * and the default port 443 are mapped to the test ports with --host-resolver-rules. The IdP
 * (RP ID idp.test) sees Chromium fetch /.well-known/webauthn before the ceremony on rp.test.
 */
const ADMIN = 'direct-admin-token-0123456789abcdef0123456789';
const skip = chromiumSkip(t, 'browser direct-grant suite');

const RP_PAGE = `<!doctype html><html><body><h1>RP</h1><script>
const idp = 'https://idp.test';
const api = (path, body) => fetch(idp + path, { method: 'POST', credentials: 'omit', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
window.direct = async (clientId, challenge, username) => {
  const started = await api('/auth/authorize/direct/options', username ? { client_id: clientId, username, signup: true } : { client_id: clientId });
  if (!started.ok) return started;
  const grant = { client_id: clientId, redirect_uri: location.origin + '/callback', code_challenge: challenge, code_challenge_method: 'S256', state: 'st-direct' };
  if (username) {
    const credential = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(started.options) });
    return api('/auth/authorize/direct', { ...grant, registration: { user: username, response: credential.toJSON(), signupToken: started.signupToken } });
  }
  const credential = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(started.options) });
  return api('/auth/authorize/direct', { ...grant, assertion: { response: credential.toJSON() } });
};
</script></body></html>`;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

t.test('direct grant in Chromium over TLS with related origins', { skip }, async (t) => {
  const dir = tempDir(t, 'keyplane-tls-');
  const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { cwd: dir, stdio: 'ignore' });
  run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=Keyplane Test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  ]);
  run('openssl', [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'leaf.key',
    '-out',
    'leaf.csr',
    '-subj',
    '/CN=idp.test',
  ]);
  writeFileSync(join(dir, 'ext'), 'subjectAltName=DNS:idp.test,DNS:rp.test\nextendedKeyUsage=serverAuth\n');
  run('openssl', [
    'x509',
    '-req',
    '-in',
    'leaf.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'leaf.crt',
    '-days',
    '2',
    '-extfile',
    'ext',
  ]);
  mkdirSync(join(dir, 'home/.pki/nssdb'), { recursive: true });
  run('certutil', ['-d', 'sql:home/.pki/nssdb', '-N', '--empty-password']);
  run('certutil', ['-d', 'sql:home/.pki/nssdb', '-A', '-t', 'C,,', '-n', 'keyplane-test-ca', '-i', 'ca.crt']);
  const tls = { key: readFileSync(join(dir, 'leaf.key')), cert: readFileSync(join(dir, 'leaf.crt')) };

  const idpServer = createServer(tls);
  const idpPort = await listen(idpServer);
  const seen: string[] = [];
  idpServer.prependListener('request', (request: IncomingMessage) => seen.push(`${request.method} ${request.url}`));
  const config = loadControlPlaneConfig({
    env: {},
    overrides: {
      dataDir: tempDir(t),
      issuer: 'https://idp.test',
      masterKey: TEST_MASTER_KEY,
      logLevel: 'warn',
      adminToken: ADMIN,
    },
  }) as ControlPlaneConfig & { issuer: string };
  const services = await openControlPlaneServices(config);
  const app = await buildControlPlane(services, {
    logStream: new Writable({
      write(_c, _e, done) {
        done();
      },
    }),
    serverFactory: (handler) => idpServer.on('request', handler) as never,
  });
  await app.ready();

  const rpServer = createServer(tls, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(RP_PAGE);
  });
  const rpPort = await listen(rpServer);

  const reg = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: {
      client_name: 'Direct RP',
      redirect_uris: ['https://rp.test/callback'],
      token_endpoint_auth_method: 'none',
      in_place: true,
      first_party: true,
    },
  });
  const clientId = reg.json().client_id as string;

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    env: { ...process.env, HOME: join(dir, 'home') },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      `--host-resolver-rules=MAP idp.test:443 127.0.0.1:${idpPort}, MAP rp.test:443 127.0.0.1:${rpPort}`,
    ],
  });
  // One teardown, in order: the browser, then both servers' connections, then the servers.
  t.teardown(async () => {
    await browser.close();
    rpServer.closeAllConnections();
    idpServer.closeAllConnections();
    rpServer.close();
    await app.close();
    // Fastify did not listen on this server itself (serverFactory), so it is closed here.
    await new Promise<void>((resolve) => idpServer.close(() => resolve()));
    await services.close();
  });
  const page = await browser.newPage();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: PLATFORM_AUTHENTICATOR,
  });
  await page.goto('https://rp.test/');
  // RFC 7636 Appendix B's verifier and challenge.
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
  const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

  const signedUp = await page.evaluate(([id, c]) => (globalThis as any).direct(id, c, 'dana'), [
    clientId,
    challenge,
  ] as const);
  t.match(
    signedUp,
    { ok: true, code: /^[A-Za-z0-9_-]{43}$/, state: 'st-direct', iss: 'https://idp.test' },
    `sign-up in place: ${JSON.stringify(signedUp)}`,
  );
  t.ok(
    seen.includes('GET /.well-known/webauthn'),
    `Chromium fetched the related-origins file from the RP ID (${seen.join(', ')})`,
  );
  const signedIn = await page.evaluate(([id, c]) => (globalThis as any).direct(id, c), [clientId, challenge] as const);
  t.match(
    signedIn,
    { ok: true, code: /^[A-Za-z0-9_-]{43}$/ },
    `sign-in with the new passkey: ${JSON.stringify(signedIn)}`,
  );
  const tokens = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: clientId,
      code: signedIn.code,
      redirect_uri: 'https://rp.test/callback',
      code_verifier: verifier,
    }).toString(),
  });
  t.equal(tokens.statusCode, 200, tokens.body);
  t.ok(tokens.json().id_token, 'the code is exchanged at /auth/token like any other');
});
