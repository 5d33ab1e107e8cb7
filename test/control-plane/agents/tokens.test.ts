import t from 'tap';
import { SignJWT, decodeJwt } from 'jose';
import { randomBytes } from 'node:crypto';
import { agentKey, enrollAgent, recordEvents, type AgentKey } from '../../helpers/agents.js';
import { ADMIN, RESOURCE, basicAuth, registerClient } from '../../helpers/oidc.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['agents', 'oidc', 'clients', 'admin'] as const;
const TOKEN = '/auth/token';
const ISSUER = 'http://localhost:4400';

async function assertion(
  key: AgentKey,
  agentId: string,
  o: { aud?: string; exp?: number; jti?: string; sub?: string } = {},
) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ jti: o.jti ?? randomBytes(12).toString('base64url') })
    .setProtectedHeader({ alg: key.alg })
    .setIssuer(agentId)
    .setSubject(o.sub ?? agentId)
    .setAudience(o.aud ?? `${ISSUER}${TOKEN}`)
    .setIssuedAt(now)
    .setExpirationTime(o.exp ?? now + 120)
    .sign(key.privateKey);
}

async function setup(t: Parameters<typeof buildSignedIn>[0]) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const { browser } = await built.signIn({ username: 'alice' });
  const { browser: strong } = await built.signIn({ username: 'alice', assurance: 'sensitive' });
  const agent = await enrollAgent(built.app, browser);
  const client = await registerClient(built.app, {
    access: { humans: false, agents: true },
    scope: 'openid read write',
  });
  const humans = await registerClient(built.app, { scope: 'openid read' });
  const grant = await strong.post('/auth/agents/proof/grants', {
    agent_id: agent.agentId,
    client_id: client.client_id,
    resource: RESOURCE,
    scope: 'read',
  });
  const token = async (
    o: { key?: AgentKey; assertion?: string; scope?: string; dpop?: boolean; c?: typeof client } = {},
  ) => {
    const key = o.key ?? agent.key;
    const payload = new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: o.assertion ?? (await assertion(agent.key, agent.agentId)),
      resource: RESOURCE,
      ...(o.scope ? { scope: o.scope } : {}),
    });
    return built.app.inject({
      method: 'POST',
      url: TOKEN,
      payload: payload.toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: basicAuth(o.c ?? client),
        ...(o.dpop === false ? {} : { dpop: await key.proof(TOKEN) }),
      },
    });
  };
  const introspect = async (accessToken: string) =>
    (
      await built.app.inject({
        method: 'POST',
        url: '/auth/introspect',
        headers: { authorization: basicAuth(client) },
        payload: { token: accessToken },
      })
    ).json();
  return { ...built, browser, strong, agent, client, humans, grant, token, introspect };
}

t.test('an owner-approved grant gives the agent a DPoP-bound token with an agent principal', async (t) => {
  const { grant, token, agent, introspect } = await setup(t);
  t.equal(grant.statusCode, 200, grant.body);
  t.match(grant.json().grant_id, /^agg_/);
  const res = await token();
  t.equal(res.statusCode, 200, res.body);
  t.equal(res.json().token_type, 'DPoP');
  const claims = decodeJwt(res.json().access_token);
  t.same(claims.cnf, { jkt: agent.key.jkt });
  t.equal(claims.sub, agent.agentId);
  t.equal(claims.aud, RESOURCE);
  t.equal(claims.scope, 'read');
  t.match(claims.svc, { principal: { type: 'agent', id: agent.agentId, kind: 'ai_agent' } });
  t.match((claims.svc as { principal: { owner: string } }).principal.owner, /^usr_/);
  t.equal((await introspect(res.json().access_token)).active, true);
});

t.test('suspending the agent stops its grants and its issued tokens at once', async (t) => {
  const { token, browser, agent, introspect } = await setup(t);
  const issued = (await token()).json().access_token;
  await browser.post('/auth/agents/proof/lifecycle', { agent_id: agent.agentId, action: 'suspend' });
  t.equal((await introspect(issued)).active, false);
  t.equal((await token()).json().error, 'invalid_grant');
  await browser.post('/auth/agents/proof/lifecycle', { agent_id: agent.agentId, action: 'resume' });
  t.equal((await token()).json().error, 'invalid_grant', 'grants stay stopped after a resume: the owner approves anew');
});

t.test('revoking one grant ends its tokens', async (t) => {
  const { token, strong, grant, introspect } = await setup(t);
  const issued = (await token()).json().access_token;
  const revoked = await strong.post('/auth/agents/proof/grants/revoke', { grant_id: grant.json().grant_id });
  t.equal(revoked.statusCode, 200);
  t.equal((await introspect(issued)).active, false);
});

t.test(
  'the jwt-bearer grant refuses bad assertions, another key, no DPoP, a reused jti, a wider scope and a humans-only client; nothing is issued',
  async (t) => {
    const { token, agent, humans, services } = await setup(t);
    const events = recordEvents(services);
    const other = await agentKey();
    t.equal((await token({ key: other })).json().error, 'invalid_dpop_proof', 'a DPoP proof by another key');
    t.equal((await token({ dpop: false })).json().error, 'invalid_dpop_proof');
    t.equal(
      (await token({ assertion: await assertion(other, agent.agentId) })).json().error,
      'invalid_grant',
      'signed by another key',
    );
    t.equal(
      (await token({ assertion: await assertion(agent.key, agent.agentId, { aud: 'https://elsewhere' }) })).json()
        .error,
      'invalid_grant',
    );
    t.equal(
      (
        await token({
          assertion: await assertion(agent.key, agent.agentId, { exp: Math.floor(Date.now() / 1000) + 3600 }),
        })
      ).json().error,
      'invalid_grant',
      'exp beyond 5 minutes',
    );
    t.equal(
      (await token({ assertion: await assertion(agent.key, agent.agentId, { sub: 'agt_other' }) })).json().error,
      'invalid_grant',
    );
    t.equal((await token({ assertion: 'not-a-jwt' })).json().error, 'invalid_grant');
    t.equal((await token({ scope: 'write' })).json().error, 'invalid_scope');
    t.equal((await token({ c: humans })).json().error, 'unauthorized_client');
    t.same(events, [], 'nothing issued');
    const once = await assertion(agent.key, agent.agentId, { jti: 'same' });
    t.equal((await token({ assertion: once })).statusCode, 200);
    t.equal((await token({ assertion: once })).json().error, 'invalid_grant', 'a reused jti');
  },
);

t.test('grant approval needs sensitive, an active agent and a client that admits agents', async (t) => {
  const { browser, strong, agent, humans, client } = await setup(t);
  t.equal(
    (
      await browser.post('/auth/agents/proof/grants', {
        agent_id: agent.agentId,
        client_id: client.client_id,
        scope: 'read',
      })
    ).json().reason,
    'insufficient_assurance',
  );
  t.equal(
    (
      await strong.post('/auth/agents/proof/grants', {
        agent_id: agent.agentId,
        client_id: humans.client_id,
        scope: 'read',
      })
    ).json().reason,
    'forbidden',
  );
  t.equal(
    (
      await strong.post('/auth/agents/proof/grants', {
        agent_id: agent.agentId,
        client_id: client.client_id,
        scope: 'admin',
      })
    ).json().reason,
    'invalid_scope',
  );
  t.equal(
    (
      await strong.post('/auth/agents/proof/grants', {
        agent_id: agent.agentId,
        client_id: client.client_id,
        scope: 'read',
        resource: 'https://other.example',
      })
    ).json().reason,
    'invalid_target',
  );
});

t.test(
  "the operator approves a grant on the owner's behalf with the admin token, and the receipt says so",
  async (t) => {
    const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
    const { browser } = await built.signIn({ username: 'alice' });
    const agent = await enrollAgent(built.app, browser);
    const client = await registerClient(built.app, { access: { humans: false, agents: true }, scope: 'openid read' });
    const events = recordEvents(built.app.kp);
    const approve = (agentId: string, body: Record<string, unknown>, token = ADMIN) =>
      built.app.inject({
        method: 'POST',
        url: `/admin/agents/${agentId}/grants`,
        payload: body,
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });

    const noToken = await approve(agent.agentId, { client_id: client.client_id, scope: 'read' }, '');
    t.equal(noToken.statusCode, 401);
    t.equal(noToken.json().reason, 'unauthorized');
    const unknown = await approve('agt_nobody', { client_id: client.client_id, scope: 'read' });
    t.equal(unknown.statusCode, 404);
    t.equal(unknown.json().reason, 'not_found');
    const wide = await approve(agent.agentId, { client_id: client.client_id, scope: 'write' });
    t.equal(wide.json().reason, 'invalid_scope', 'the same checks as the owner’s approval');

    const approved = await approve(agent.agentId, { client_id: client.client_id, scope: 'read' });
    t.equal(approved.statusCode, 200, approved.body);
    t.match(approved.json(), { ok: true, grant_id: /^agg_/ });
    t.match(
      events.filter((e) => e.type === 'agent.grant_approved'),
      [{ agentId: agent.agentId, clientId: client.client_id, scope: 'read', approvedBy: 'operator' }],
    );
  },
);
