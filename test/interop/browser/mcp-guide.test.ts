import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, generateKeyPair } from 'jose';
import { request } from 'undici';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import { findFreePort } from '#lib/runtime/listen.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir } from '../../helpers/build.js';
import { childEnv, startListening } from '../../helpers/cli.js';
import { codeBlocksUnder } from '../../helpers/doc-blocks.js';
import { until } from '../../helpers/until.js';
import { startTestGateway } from '../../gateway/helpers.js';
import { ADMIN, startCp } from '../../gateway/real-world.js';

/**
 * docs/mcp.md §2 as a reader follows it: deploy/examples/mcp-server/server.mjs behind a real
 * gateway and control plane, and the guide's client program, copied from the guide, run as its own
 * Node.js process. Chromium plays the person who opens the printed URL and signs up with a passkey.
 */
const skip = chromiumSkip(t, "the MCP guide's client in Chromium");
const [clientBlock, runBlock] = codeBlocksUnder('docs/mcp.md', '2. The MCP client: the official SDK');

const POLICY: GatewayPolicy = {
  mode: 'enforce',
  routes: [{ path: '/mcp', mcp: true, min_assurance: 'passkey', tools: { delete_x: { min_assurance: 'sensitive' } } }],
};

t.test(
  "the guide's MCP client signs a person in, calls the example server's tool, and sees the step-up challenge",
  { skip, timeout: 180_000 },
  async (t) => {
    t.equal(clientBlock!.lang, 'js');
    t.match(runBlock!.text, /^KEYPLANE_URL=\S+ KEYPLANE_ADMIN_TOKEN=… node notes-mcp-client\.mjs (\S+)\n$/);
    const cp = await startCp(t);
    const serverPort = await findFreePort();
    const gatewayPort = await findFreePort();
    const gatewayUrl = `http://localhost:${gatewayPort}`;
    const mcpServer = await startListening('node', ['deploy/examples/mcp-server/server.mjs'], {
      env: { KEYPLANE_GATEWAY_URL: gatewayUrl, PORT: String(serverPort) },
    });
    t.teardown(() => mcpServer.stop());

    const reg = await request(`${cp.url}/register`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Notes tools gateway',
        redirect_uris: [`${gatewayUrl}/_gate/callback`],
        grant_types: ['authorization_code', 'refresh_token'],
        scope: 'openid email offline_access',
        token_endpoint_auth_method: 'client_secret_basic',
        gateway: POLICY,
      }),
    });
    const gatewayClient = (await reg.body.json()) as { client_id: string; client_secret: string };
    t.equal(reg.statusCode, 201);
    const gw = await startTestGateway(t, {
      upstream: mcpServer.url,
      remoteKeys: true,
      overrides: {
        port: gatewayPort,
        controlPlane: cp.url,
        clientId: gatewayClient.client_id,
        clientSecret: gatewayClient.client_secret,
      },
    });
    await until("the gateway's first signed config", async () => gw.running.gateway.configHolder.current ?? undefined);

    const direct = await request(`${mcpServer.url}/mcp`, { method: 'POST', body: '{}' });
    t.equal(direct.statusCode, 401, 'the example server refuses a request that did not come through the gateway');
    await direct.body.dump();
    // Signed as the gateway's assertion is, with every claim right, but by a key the gateway's JWKS does not list.
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT({ principal_type: 'human', assurance: 'sensitive', acr: 'sensitive' })
      .setProtectedHeader({ alg: 'ES256', typ: 'kp-gate-assertion+jwt', kid: 'forged' })
      .setIssuer(gatewayUrl)
      .setAudience(mcpServer.url)
      .setSubject('usr_forged')
      .setIssuedAt()
      .setExpirationTime('1m')
      .sign(privateKey);
    const forgedCall = await request(`${mcpServer.url}/mcp`, {
      method: 'POST',
      headers: { 'x-auth-assertion': forged, 'content-type': 'application/json' },
      body: '{}',
    });
    t.equal(forgedCall.statusCode, 401, 'nor one whose assertion the gateway did not sign');
    await forgedCall.body.dump();

    // The program, as the guide prints it, next to the packages the guide installs.
    const dir = tempDir(t, 'keyplane-mcp-guide-');
    symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, 'notes-mcp-client.mjs'), clientBlock!.text);
    const mcpUrl = `${gatewayUrl}/mcp`;
    const client = spawn('node', ['notes-mcp-client.mjs', mcpUrl], {
      cwd: dir,
      env: childEnv({ KEYPLANE_URL: cp.url, KEYPLANE_ADMIN_TOKEN: ADMIN }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.teardown(() => void client.kill());
    let stdout = '';
    let stderr = '';
    client.stdout.on('data', (d) => (stdout += d));
    client.stderr.on('data', (d) => (stderr += d));
    const exited = once(client, 'exit');
    const authorizationUrl = await until(
      'the printed authorization URL',
      async () => /^Open in a browser to sign in: (\S+)$/m.exec(stdout)?.[1],
    );
    t.equal(new URL(authorizationUrl).searchParams.get('resource'), mcpUrl, 'asks for the route (RFC 8707)');

    const { page, problems, addAuthenticator } = await launchChromium(t);
    await addAuthenticator();
    await page.goto(authorizationUrl);
    await page.fill('input[name="username"]', `mcpguide-${Date.now() % 100000}`);
    await page.click('button[data-action="signup"]');
    await page
      .waitForSelector('form[data-action="continue"] button[value="allow"]', { timeout: 30_000 })
      .catch((error) => {
        throw new Error(`no approval page at ${page.url()}; ${problems.join('; ')}; ${error}`);
      });
    await page.click('form[data-action="continue"] button[value="allow"]');
    const redirectUri = new URL(authorizationUrl).searchParams.get('redirect_uri')!;
    await page.waitForURL((url) => url.href.startsWith(redirectUri), { timeout: 30_000 });
    t.equal(await page.textContent('body'), 'Signed in: you can close this window.', 'back at the loopback URI');

    const [code] = (await exited) as [number];
    t.equal(code, 0, `the client finished; stderr: ${stderr}`);
    t.comment(stdout);
    const lines = stdout.trim().split('\n').slice(1);
    t.equal(lines[0], 'tools: whoami, delete_x');
    t.match(lines[1], /^whoami: human:usr_\S+$/, 'the example server saw the person from the signed assertion');
    t.equal(
      lines[2],
      'delete_x refused: the tool delete_x needs assurance sensitive: sign in again with acr_values=sensitive',
      'the client sees the RFC 9470 step-up, not a bare 401',
    );
    t.same(JSON.parse(lines[3]!.replace(/^challenge: /, '')), {
      realm: gatewayUrl,
      error: 'insufficient_user_authentication',
      error_description: 'the tool delete_x needs assurance sensitive',
      acr_values: 'sensitive',
      resource_metadata: `${gatewayUrl}/.well-known/oauth-protected-resource/mcp`,
    });
  },
);
