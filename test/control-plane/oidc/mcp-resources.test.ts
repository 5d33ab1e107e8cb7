import t from 'tap';
import { decodeJwt } from 'jose';
import { Browser, buildSignedIn } from '../../helpers/signed-in.js';
import {
  ADMIN,
  authorizeUrl,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  redirectParams,
  registerClient,
} from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['mcp', 'clients', 'oidc'] as const;

/**
 * An MCP route's resource at the control plane (docs/gateway.md#mcp-routes): any client may ask
 * for it though it never registered it, the approval page is shown every time (never remembered,
 * never skipped for a first-party client), and only paths the gateway marked `mcp` are open so.
 */
const GATEWAY = 'https://tools.example.com';
const MCP = `${GATEWAY}/mcp`;

async function setup(t: Parameters<typeof buildSignedIn>[0], metadata: Record<string, unknown> = {}) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  await registerClient(built.app, {
    client_name: 'Tools gate',
    redirect_uris: [`${GATEWAY}/_gate/callback`],
    gateway: { mode: 'enforce', routes: [{ path: '/mcp', mcp: true }, { path: '/app' }] },
  });
  const client = await registerClient(built.app, metadata);
  const { browser } = await built.signIn({ username: 'alice' });
  return { ...built, client, browser };
}

const approvalShown = async (browser: Browser, params: Record<string, string | undefined>) => {
  const res = await browser.get(authorizeUrl(params));
  return res.statusCode === 200 && res.body.includes('data-action="continue"');
};

t.test("any client gets a token for an MCP route's resource, after the approval page every time", async (t) => {
  const { app, client, browser } = await setup(t);
  const { verifier, challenge } = pkcePair();
  const request = goodRequest(client, challenge, { resource: MCP, scope: 'openid' });
  t.ok(await approvalShown(browser, request), 'the approval page the first time');
  const { code } = await obtainCode(browser, request);
  const tokens = await exchangeCode(app, client, code, verifier, {}, { resource: MCP });
  t.equal(tokens.statusCode, 200, tokens.body);
  t.equal(decodeJwt(tokens.json().access_token)['aud'], MCP);
  t.ok(await approvalShown(browser, request), 'and again: an approval for an MCP resource is not remembered');

  const silent = await browser.get(authorizeUrl({ ...request, prompt: 'none' }));
  t.equal(redirectParams(silent).get('error'), 'consent_required', 'prompt=none cannot skip it');
  const other = await browser.get(authorizeUrl({ ...request, resource: `${GATEWAY}/app` }));
  t.equal(redirectParams(other).get('error'), 'invalid_target', 'a route that is no MCP route is not open to all');
});

t.test('a first-party client sees the approval page for an MCP resource too', async (t) => {
  const { browser, client } = await setup(t, { first_party: true });
  const { challenge } = pkcePair();
  t.ok(await approvalShown(browser, goodRequest(client, challenge, { resource: MCP, scope: 'openid' })));
  const own = await browser.get(authorizeUrl(goodRequest(client, challenge, { scope: 'openid' })));
  t.equal(own.statusCode, 302, 'while its own sign-ins skip it as before');
});
