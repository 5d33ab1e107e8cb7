import t from 'tap';
import { createLocalJWKSet, SignJWT } from 'jose';
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { enrollAgent } from '../../helpers/agents.js';
import { ADMIN, RESOURCE, basicAuth, registerClient } from '../../helpers/oidc.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { startTestGateway, startUpstream } from '../../gateway/helpers.js';

t.test(
  'an agent token with DPoP passes a gateway route that admits agents and is refused where only humans are allowed',
  async (t) => {
    const { app, signIn } = await buildSignedIn(t, { config: { adminToken: ADMIN } });
    const { browser } = await signIn({ username: 'alice' });
    const { browser: strong } = await signIn({ username: 'alice', assurance: 'sensitive' });
    const agent = await enrollAgent(app, browser);
    const client = await registerClient(app, { access: { humans: false, agents: true }, scope: 'openid read' });
    await strong.post('/auth/agents/proof/grants', {
      agent_id: agent.agentId,
      client_id: client.client_id,
      resource: RESOURCE,
      scope: 'read',
    });
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
        resource: RESOURCE,
      }).toString(),
    });
    t.equal(issued.statusCode, 200, issued.body);
    const token = issued.json().access_token as string;

    const upstream = await startUpstream(t);
    const jwks = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    const gw = await startTestGateway(t, {
      upstream: upstream.url,
      overrides: { publicUrl: RESOURCE },
      deps: { controlPlaneKeys: createLocalJWKSet(jwks) },
      policy: {
        mode: 'enforce',
        accept_clients: [client.client_id],
        routes: [
          { path: '/agents', principals: ['agent'], dpop: 'required' },
          { path: '/humans', principals: ['human'] },
        ],
      } as never,
    });
    const call = async (path: string) =>
      request(`${gw.local}${path}`, {
        method: 'POST',
        headers: {
          authorization: `DPoP ${token}`,
          dpop: await agent.key.proof(`${RESOURCE}${path}`, { accessToken: token }),
        },
        body: '{}',
      });
    const allowed = await call('/agents/run');
    t.equal(allowed.statusCode, 200, JSON.stringify(await allowed.body.text()));
    t.equal(upstream.last().headers['x-auth-principal-type'], 'agent');
    t.equal(upstream.last().headers['x-auth-subject'], agent.agentId);
    const refused = await call('/humans/page');
    t.equal(refused.statusCode, 403);
    t.match(await refused.body.json(), { reason: 'principal_not_allowed' });
  },
);
