import t from 'tap';
import { createLocalJWKSet, decodeJwt, SignJWT } from 'jose';
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { enrollAgent } from '../../helpers/agents.js';
import { basicAuth, registerClient, ADMIN } from '../../helpers/oidc.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { startTestGateway, startUpstream } from '../../gateway/helpers.js';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';

/**
 * Agents call MCP servers too (docs/gateway.md#mcp-routes): a gateway registers an MCP route; an
 * agent's owner approves a grant for that route's resource at a client that never registered it
 * (any client may ask for an MCP route's resource); the agent's DPoP-bound jwt-bearer token then
 * passes the route, and the MCP server sees an agent.
 */
const GATEWAY = 'https://tools.example.com';
const MCP = `${GATEWAY}/mcp`;
const POLICY: GatewayPolicy = {
  mode: 'enforce',
  routes: [{ path: '/mcp', mcp: true, tools: { delete_x: { min_assurance: 'sensitive' } } }],
};

t.test("an agent's token for an MCP route's resource, approved by its owner, passes the route", async (t) => {
  const { app, signIn } = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const { browser } = await signIn({ username: 'alice' });
  const { browser: strong } = await signIn({ username: 'alice', assurance: 'sensitive' });
  await registerClient(app, {
    client_name: 'Tools gate',
    redirect_uris: [`${GATEWAY}/_gate/callback`],
    gateway: POLICY,
  });
  const agent = await enrollAgent(app, browser);
  const client = await registerClient(app, { access: { humans: false, agents: true }, scope: 'openid email' });

  const elsewhere = await strong.post('/auth/agents/proof/grants', {
    agent_id: agent.agentId,
    client_id: client.client_id,
    resource: `${GATEWAY}/other`,
    scope: 'email',
  });
  t.equal(elsewhere.statusCode, 400, 'a path of the gateway that is no MCP route is not open to every client');
  const approved = await strong.post('/auth/agents/proof/grants', {
    agent_id: agent.agentId,
    client_id: client.client_id,
    resource: MCP,
    scope: 'email',
  });
  t.equal(approved.statusCode, 200, approved.body);

  const now = Math.floor(Date.now() / 1000);
  const assertion = await new SignJWT({ jti: randomBytes(12).toString('base64url') })
    .setProtectedHeader({ alg: agent.key.alg })
    .setIssuer(agent.agentId)
    .setSubject(agent.agentId)
    .setAudience('http://localhost:4400/auth/token')
    .setIssuedAt(now)
    .setExpirationTime(now + 60)
    .sign(agent.key.privateKey);
  const issued = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: basicAuth(client),
      dpop: await agent.key.proof('/auth/token'),
    },
    payload: new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion,
      resource: MCP,
    }).toString(),
  });
  t.equal(issued.statusCode, 200, issued.body);
  const token = issued.json().access_token as string;
  t.match(decodeJwt(token), { aud: MCP, svc: { principal: { type: 'agent' } } });

  const upstream = await startUpstream(t);
  const jwks = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
  const gw = await startTestGateway(t, {
    upstream: upstream.url,
    overrides: { publicUrl: GATEWAY },
    deps: { controlPlaneKeys: createLocalJWKSet(jwks) },
    policy: POLICY,
  });
  const call = async (name: string) =>
    request(`${gw.local}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `DPoP ${token}`,
        dpop: await agent.key.proof(MCP, { accessToken: token }),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } }),
    });
  const read = await call('read_x');
  t.equal(read.statusCode, 200, await read.body.text());
  t.equal(upstream.last().headers['x-auth-principal-type'], 'agent');
  t.equal(upstream.last().headers['x-auth-subject'], agent.agentId);
  const destroy = await call('delete_x');
  t.equal(destroy.statusCode, 401, 'an agent token is not a sensitive sign-in');
  t.match(await destroy.body.json(), { reason: 'insufficient_user_authentication', acr_values: 'sensitive' });
});
