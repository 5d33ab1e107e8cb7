import t from 'tap';
import * as client from 'openid-client';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'undici';
import {
  SignJWT,
  createLocalJWKSet,
  decodeJwt,
  exportJWK,
  generateKeyPair,
  jwtVerify,
  type CryptoKey,
  type JSONWebKeySet,
  type JWK,
} from 'jose';
import {
  ADMIN,
  CALLBACK,
  RESOURCE,
  browse,
  passkeySignUp,
  refusal,
  register,
  start,
  type CookieJar,
} from '../../helpers/openid-client.js';
import { recordEvents } from '../../helpers/agents.js';
import { startTestGateway, startUpstream } from '../../gateway/helpers.js';
import { until } from '../../helpers/until.js';
import { createTokenClient } from '../../../gateway/src/token-client.js';

/**
 * Token exchange by and for agents through openid-client's `genericGrantRequest`: an agent
 * exchanges its own DPoP-bound token for one at another resource its owner approved (`act` names
 * the agent, the agent principal kept), and a relying party exchanging its person's token names
 * the person's agent as the actor with an RFC 8693 `actor_token` (the agent's access token, or a
 * JWT the agent signed); introspection shows `act`, receipts name the actors; and each refusal.
 */
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const JWT = 'urn:ietf:params:oauth:token-type:jwt';
const DOWNSTREAM = 'https://ledger.notes.example.com';
const UNAPPROVED = 'https://files.notes.example.com';

type KeyPair = Awaited<ReturnType<typeof client.randomDPoPKeyPair>>;

interface Agent {
  agentId: string;
  keys: KeyPair;
  jwk: JWK;
}

async function dpopProof(keys: KeyPair, jwk: JWK, htu: string, nonce?: string, accessToken?: string) {
  return new SignJWT({
    htm: 'POST',
    htu,
    jti: randomBytes(12).toString('base64url'),
    iat: Math.floor(Date.now() / 1000),
    ...(nonce ? { nonce } : {}),
    ...(accessToken ? { ath: createHash('sha256').update(accessToken).digest('base64url') } : {}),
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
    .sign(keys.privateKey as CryptoKey);
}

/** Enrolls an agent over HTTP for the owner signed in on `jar` (begin, approve, complete with DPoP). */
async function enroll(base: string, jar: CookieJar): Promise<Agent> {
  const keys = (await generateKeyPair('ES256', { extractable: true })) as KeyPair;
  const jwk = await exportJWK(keys.publicKey as CryptoKey);
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base, ...headers },
      body: JSON.stringify(body),
    });
  const begun = (await (
    await post('/auth/agents/proof/enroll/begin', { name: 'Ledger bot', subjectKind: 'ai_agent', publicJwk: jwk })
  ).json()) as Record<string, string>;
  const approved = await post(
    '/auth/agents/proof/enroll/approve',
    { enrollment_id: begun.enrollment_id, owner_code: begun.owner_code },
    { cookie: jar.header() },
  );
  if (!approved.ok) throw new Error(`approve: ${await approved.text()}`);
  const complete = `${base}/auth/agents/proof/enroll/complete`;
  const body = { enrollment_id: begun.enrollment_id };
  let res = await post('/auth/agents/proof/enroll/complete', body, { dpop: await dpopProof(keys, jwk, complete) });
  const nonce = res.headers.get('dpop-nonce');
  if (res.status === 401 && nonce)
    res = await post('/auth/agents/proof/enroll/complete', body, { dpop: await dpopProof(keys, jwk, complete, nonce) });
  if (!res.ok) throw new Error(`complete: ${await res.text()}`);
  return { agentId: ((await res.json()) as Record<string, string>).agent_id!, keys, jwk };
}

async function approveGrant(base: string, agentId: string, body: Record<string, string>) {
  const res = await fetch(`${base}/admin/agents/${agentId}/grants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`grant: ${await res.text()}`);
}

/** An assertion signed by the agent key for the token endpoint (RFC 7523 §3). */
function agentJwt(base: string, agent: Agent, o: { jti?: string } = {}) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ jti: o.jti ?? randomBytes(12).toString('base64url') })
    .setProtectedHeader({ alg: 'ES256' })
    .setIssuer(agent.agentId)
    .setSubject(agent.agentId)
    .setAudience(`${base}/auth/token`)
    .setIssuedAt(now)
    .setExpirationTime(now + 120)
    .sign(agent.keys.privateKey as CryptoKey);
}

async function configure(base: string, registered: Record<string, any>) {
  return client.discovery(
    new URL(base),
    registered.client_id,
    registered.client_secret,
    client.ClientSecretBasic(registered.client_secret as string),
    { execute: [client.allowInsecureRequests] },
  );
}

async function signInTo(config: client.Configuration, base: string, jar: CookieJar) {
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid email profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 'x',
  });
  return client.authorizationCodeGrant(config, await browse(url, jar, base), {
    pkceCodeVerifier: verifier,
    expectedState: 'x',
  });
}

async function setup(t: Parameters<typeof start>[0]) {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'agent-owner-omar');
  const agent = await enroll(base, jar);
  const notes = await register(base, {
    client_name: 'Notes',
    grant_types: ['authorization_code', JWT_BEARER, EXCHANGE],
    scope: 'openid email profile notes:read notes:write',
    resources: [RESOURCE, DOWNSTREAM, UNAPPROVED],
    access: { humans: true, agents: true },
  });
  await approveGrant(base, agent.agentId, {
    client_id: notes.client_id,
    resource: RESOURCE,
    scope: 'notes:read notes:write',
  });
  await approveGrant(base, agent.agentId, { client_id: notes.client_id, resource: DOWNSTREAM, scope: 'notes:read' });
  const config = await configure(base, notes);
  const agentDpop = client.getDPoPHandle(config, agent.keys);
  const agentToken = await client.genericGrantRequest(
    config,
    JWT_BEARER,
    { assertion: await agentJwt(base, agent), resource: RESOURCE },
    { DPoP: agentDpop },
  );
  const events = recordEvents(server.app.kp);
  return { server, base, jar, agent, notes, config, agentDpop, agentToken, events };
}

t.test('openid-client: an agent exchanges its own token for another resource its owner approved', async (t) => {
  const { base, agent, config, agentDpop, agentToken, events } = await setup(t);
  const exchange = (extra: Record<string, string>, dpop?: client.DPoPHandle, token = agentToken.access_token) =>
    client.genericGrantRequest(
      config,
      EXCHANGE,
      { subject_token: token, subject_token_type: ACCESS_TOKEN, ...extra },
      dpop ? { DPoP: dpop } : {},
    );

  const exchanged = await exchange({ resource: DOWNSTREAM, scope: 'notes:read' }, agentDpop);
  t.match(exchanged, { token_type: 'dpop', issued_token_type: ACCESS_TOKEN, scope: 'notes:read' });
  const claims = decodeJwt(exchanged.access_token);
  const original = decodeJwt(agentToken.access_token);
  t.match(claims, {
    sub: agent.agentId,
    aud: DOWNSTREAM,
    act: { sub: agent.agentId },
    svc: { principal: { type: 'agent', id: agent.agentId } },
    cnf: original.cnf,
  });
  t.ok(claims.exp! <= original.exp!, 'never outlives the token it came from');
  const introspected = await client.tokenIntrospection(config, exchanged.access_token);
  t.match(introspected, { active: true, sub: agent.agentId, act: { sub: agent.agentId } });
  t.match(
    events.filter((e) => e.type === 'token.exchanged'),
    [{ agentId: agent.agentId, resource: DOWNSTREAM, actors: [agent.agentId] }],
    'a token.exchanged receipt names the agent',
  );

  t.equal(
    await refusal(exchange({ resource: DOWNSTREAM, scope: 'notes:write' }, agentDpop)),
    'invalid_scope',
    'no scope the owner did not approve for that resource',
  );
  t.equal(
    await refusal(exchange({ resource: UNAPPROVED }, agentDpop)),
    'invalid_grant',
    'a resource the owner approved no grant for',
  );
  t.equal(await refusal(exchange({ resource: DOWNSTREAM })), 'invalid_dpop_proof', 'without a DPoP proof');
  const stranger = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
  t.equal(
    await refusal(exchange({ resource: DOWNSTREAM }, stranger)),
    'invalid_dpop_proof',
    'a proof by another key than the one the token is bound to',
  );
  t.equal(
    await refusal(
      exchange({ resource: DOWNSTREAM, actor_token: await agentJwt(base, agent), actor_token_type: JWT }, agentDpop),
    ),
    'invalid_request',
    'an agent exchanging its own token is the actor',
  );
  const humansOnly = await register(base, {
    client_name: 'Humans only',
    grant_types: ['authorization_code', EXCHANGE],
    scope: 'openid',
  });
  t.equal(
    await refusal(
      client.genericGrantRequest(
        await configure(base, humansOnly),
        EXCHANGE,
        { subject_token: agentToken.access_token, subject_token_type: ACCESS_TOKEN, resource: RESOURCE },
        { DPoP: agentDpop },
      ),
    ),
    'unauthorized_client',
    'a client that does not admit agents',
  );
});

t.test('openid-client: an actor_token names the person’s agent as the actor of an exchange', async (t) => {
  const { base, jar, agent, notes, config, agentDpop, agentToken, events } = await setup(t);
  const person = await signInTo(config, base, jar);
  const exchange = (extra: Record<string, string>, dpop?: client.DPoPHandle) =>
    client.genericGrantRequest(
      config,
      EXCHANGE,
      { subject_token: person.access_token, subject_token_type: ACCESS_TOKEN, resource: DOWNSTREAM, ...extra },
      dpop ? { DPoP: dpop } : {},
    );

  const byAccessToken = await exchange(
    { actor_token: agentToken.access_token, actor_token_type: ACCESS_TOKEN },
    agentDpop,
  );
  const claims = decodeJwt(byAccessToken.access_token);
  t.match(claims, {
    sub: person.claims()!.sub,
    client_id: notes.client_id,
    aud: DOWNSTREAM,
    act: { sub: agent.agentId },
    svc: { principal: { type: 'human' } },
    cnf: decodeJwt(agentToken.access_token).cnf,
  });
  t.notOk((claims.act as Record<string, unknown>).act, 'the person’s own token had no actor');
  t.match(await client.tokenIntrospection(config, byAccessToken.access_token), {
    active: true,
    act: { sub: agent.agentId },
  });

  const byJwt = await exchange({ actor_token: await agentJwt(base, agent, { jti: 'once' }), actor_token_type: JWT });
  t.match(decodeJwt(byJwt.access_token), { sub: person.claims()!.sub, act: { sub: agent.agentId } });
  t.match(
    events.filter((e) => e.type === 'token.exchanged'),
    [
      { agentId: agent.agentId, clientId: notes.client_id, actors: [agent.agentId] },
      { agentId: agent.agentId, clientId: notes.client_id, actors: [agent.agentId] },
    ],
  );

  t.equal(
    await refusal(exchange({ actor_token: await agentJwt(base, agent, { jti: 'once' }), actor_token_type: JWT })),
    'invalid_request',
    'an actor JWT is used once',
  );
  t.equal(
    await refusal(exchange({ actor_token: agentToken.access_token, actor_token_type: ACCESS_TOKEN })),
    'invalid_request',
    'a DPoP-bound actor token without a proof by its key',
  );
  t.equal(
    await refusal(exchange({ actor_token: person.access_token, actor_token_type: ACCESS_TOKEN })),
    'invalid_request',
    'a person’s token is no actor token',
  );
  t.equal(
    await refusal(exchange({ actor_token: agentToken.access_token, actor_token_type: JWT }, agentDpop)),
    'invalid_request',
    'an access token presented as an agent JWT',
  );
  t.equal(
    await refusal(exchange({ actor_token: 'x', actor_token_type: 'urn:ietf:params:oauth:token-type:id_token' })),
    'invalid_request',
    'an actor token type not accepted',
  );
  t.equal(await refusal(exchange({ actor_token: agentToken.access_token })), 'invalid_request', 'no actor_token_type');

  // Someone else's agent cannot act for this person.
  const otherJar = await passkeySignUp(base, 'agent-owner-olga');
  const other = await enroll(base, otherJar);
  await approveGrant(base, other.agentId, { client_id: notes.client_id, resource: RESOURCE, scope: 'notes:read' });
  t.equal(
    await refusal(exchange({ actor_token: await agentJwt(base, other), actor_token_type: JWT })),
    'invalid_request',
    'an agent the person does not own',
  );
  // The owner's agent with no grant at this client.
  const idle = await enroll(base, jar);
  t.equal(
    await refusal(exchange({ actor_token: await agentJwt(base, idle), actor_token_type: JWT })),
    'invalid_request',
    'an agent the owner approved nothing for at this client',
  );
  t.equal(events.filter((e) => e.type === 'token.exchanged').length, 2, 'refusals leave no exchange receipt');
});

t.test('a real gateway shows the actor of an exchanged token to its upstream', async (t) => {
  const { base, jar, agent, notes, config, agentDpop, agentToken } = await setup(t);
  const person = await signInTo(config, base, jar);
  const forPerson = await client.genericGrantRequest(
    config,
    EXCHANGE,
    {
      subject_token: person.access_token,
      subject_token_type: ACCESS_TOKEN,
      resource: DOWNSTREAM,
      actor_token: agentToken.access_token,
      actor_token_type: ACCESS_TOKEN,
    },
    { DPoP: agentDpop },
  );
  const forAgent = await client.genericGrantRequest(
    config,
    EXCHANGE,
    { subject_token: agentToken.access_token, subject_token_type: ACCESS_TOKEN, resource: DOWNSTREAM },
    { DPoP: agentDpop },
  );
  t.equal(forAgent.scope, 'notes:read', 'without scope: what both the token and the grant for the resource hold');

  const upstream = await startUpstream(t);
  const jwks = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
  const gw = await startTestGateway(t, {
    upstream: upstream.url,
    overrides: { controlPlane: base, publicUrl: DOWNSTREAM },
    deps: {
      controlPlaneKeys: createLocalJWKSet(jwks),
      // The gateway asks the control plane about exchanged tokens (RFC 7662) with a client's credentials.
      tokenClient: createTokenClient({
        controlPlane: base,
        clientId: notes.client_id,
        clientSecret: notes.client_secret,
      }),
    },
    policy: {
      mode: 'enforce',
      accept_clients: [notes.client_id],
      routes: [{ path: '/', principals: ['human', 'agent'], dpop: 'required' }],
    } as never,
  });
  const gateJwks = createLocalJWKSet((await (await fetch(`${gw.local}/_gate/jwks`)).json()) as JSONWebKeySet);
  const call = async (path: string, token: string, forged = false) => {
    const res = await request(`${gw.local}${path}`, {
      method: 'POST',
      headers: {
        authorization: `DPoP ${token}`,
        dpop: await dpopProof(agent.keys, agent.jwk, `${DOWNSTREAM}${path}`, undefined, token),
        ...(forged ? { 'x-auth-actor': 'cl_forged', x_auth_actor: 'cl_forged' } : {}),
      },
      body: '{}',
    });
    t.equal(res.statusCode, 200, `${path}: ${await res.body.text()}`);
    const seen = upstream.last();
    const { payload } = await jwtVerify(String(seen.headers['x-auth-assertion']), gateJwks, { audience: upstream.url });
    return { headers: seen.headers, assertion: payload };
  };

  const delegated = await call('/ledger/person', forPerson.access_token, true);
  t.equal(delegated.headers['x-auth-subject'], person.claims()!.sub, 'the person is the subject');
  t.equal(delegated.headers['x-auth-principal-type'], 'human');
  t.equal(delegated.headers['x-auth-actor'], agent.agentId, 'the agent acts for them; a forged header is gone');
  t.match(delegated.assertion, { sub: person.claims()!.sub, act: { sub: agent.agentId } });

  const own = await call('/ledger/agent', forAgent.access_token);
  t.equal(own.headers['x-auth-subject'], agent.agentId);
  t.equal(own.headers['x-auth-principal-type'], 'agent');
  t.equal(own.headers['x-auth-actor'], agent.agentId);
  t.match(own.assertion, { sub: agent.agentId, principal_type: 'agent', act: { sub: agent.agentId } });

  // The person's account is disabled: its grants end, and with them the token exchanged from its
  // token, at the gateway too (within the few seconds it takes an introspection answer as current).
  const disabled = await fetch(`${base}/admin/accounts/${person.claims()!.sub}/disable`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  t.equal(disabled.status, 200);
  const refusedWith = await until('the gateway to refuse the exchanged token', async () => {
    const path = '/ledger/person';
    const res = await request(`${gw.local}${path}`, {
      method: 'POST',
      headers: {
        authorization: `DPoP ${forPerson.access_token}`,
        dpop: await dpopProof(agent.keys, agent.jwk, `${DOWNSTREAM}${path}`, undefined, forPerson.access_token),
      },
      body: '{}',
    });
    await res.body.dump();
    return res.statusCode === 401 ? String(res.headers['www-authenticate']) : undefined;
  });
  t.match(refusedWith, /invalid_token/, 'refused as an invalid token, with the DPoP challenge');
});
