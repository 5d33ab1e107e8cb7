import { scopesForAudience } from '#lib/apis/api-declaration.js';
import { apiAccessFor } from '../../apis/apis.js';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';
import type { VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import { oauthError } from '#lib/oauth/errors.js';
import { checkResource } from '#lib/oauth/resource.js';
import { parseScope, formatScope } from '#lib/oauth/scope.js';
import {
  ACCESS_TOKEN_TYPE,
  actorChain,
  actorClaim,
  narrowScopes,
  readExchangeRequest,
  type ExchangeRequest,
} from '#lib/oauth/token-exchange.js';
import { buildAccessTokenClaims, type AssuranceLevel } from '#lib/tokens/claims.js';
import { signAccessToken } from '#lib/tokens/sign-token.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../../context.js';
import type { StoredAgent, StoredClient, StoredGrant } from '../../storage/interface.js';
import { grantIdOfJti, mintTokens, verifyAccessToken, type AccessTokenClaimsRead } from '../tokens.js';
import { requireClientAccess, type GrantResult } from './grant-records.js';
import { approvalOf, askConsent, clientParty } from '../../consent/gate.js';
import { verifyAgentAssertion } from './agent-assertion.js';

type Services = Pick<ControlPlaneServices, 'config' | 'storage' | 'state' | 'events' | 'keys' | 'now'>;

/** An agent's access token carries its principal in `svc` (docs/agents.md#tokens). */
type AgentTokenClaims = AccessTokenClaimsRead & { svc?: { principal?: { type?: string } }; acr?: AssuranceLevel };

async function verifyToken(
  services: Services,
  token: string,
  refusal: 'invalid_grant' | 'invalid_request',
  what: string,
) {
  try {
    return (await verifyAccessToken(services, token)) as AgentTokenClaims;
  } catch (error) {
    if (isKeyplaneError(error) && error.reason === 'invalid_token')
      throw oauthError(refusal, `the ${what} is not an active access token of this server`);
    throw error;
  }
}

function isAgentToken(claims: AgentTokenClaims): boolean {
  return grantIdOfJti(claims.jti)?.startsWith('agg_') === true && claims.svc?.principal?.type === 'agent';
}

/** The audiences an access token may name to have been presented to `client`: itself or one of its APIs. */
function aimedAt(client: StoredClient, aud: unknown): boolean {
  const audiences = Array.isArray(aud) ? aud : [aud];
  return audiences.some((a) => a === client.clientId || (client.metadata.resources ?? []).includes(a as string));
}

/**
 * RFC 8693 §2.1 `actor_token`: who acts for the person when it is not the authenticated client.
 * Accepted: an agent's access token (`…:access_token`: signed here, live, its grant standing,
 * aimed at this client or one of its resources, and when DPoP-bound the request's proof made by
 * its key) or a JWT the agent signed (`…:jwt`: as the jwt-bearer assertion, one use). The agent
 * must be active, owned by the person, and approved by them at this client. Every failure is
 * `invalid_request` (§2.2.2).
 */
async function verifyActor(
  services: Services,
  client: StoredClient,
  actor: NonNullable<ExchangeRequest['actor']>,
  ownerId: string,
  proof: VerifiedDpopProof | null,
): Promise<StoredAgent> {
  if (!client.metadata.access.agents)
    throw oauthError('invalid_request', 'this client does not admit agents, so no agent can act through it');
  let agent: StoredAgent | null;
  if (actor.type === ACCESS_TOKEN_TYPE) {
    const claims = await verifyToken(services, actor.token, 'invalid_request', 'actor_token');
    if (!isAgentToken(claims)) throw oauthError('invalid_request', "the actor_token must be an agent's access token");
    if (!aimedAt(client, claims.aud))
      throw oauthError('invalid_request', 'the actor_token is not aimed at this client or one of its resources');
    // RFC 9449 §6: a bound token is only proved by its key; the new token goes to that key.
    if (claims.cnf?.jkt !== undefined && claims.cnf.jkt !== proof?.jkt)
      throw oauthError('invalid_request', 'the actor_token is DPoP-bound: send a DPoP proof made with its key');
    agent = await services.storage.agents.get(claims.sub);
  } else {
    agent = await verifyAgentAssertion(services, actor.token, 'invalid_request');
  }
  if (!agent || agent.state !== 'active') throw oauthError('invalid_request', 'the actor is not an active agent');
  if (agent.ownerId !== ownerId)
    throw oauthError('invalid_request', "the actor is not the person's own agent", { status: 400 });
  const approved = (await services.storage.agents.listGrants(agent.agentId)).some(
    (g) => g.revokedAt === null && g.clientId === client.clientId && g.ownerId === agent.ownerId,
  );
  if (!approved) throw oauthError('invalid_request', 'the owner approved no grant for this agent at this client');
  return agent;
}

/**
 * Token exchange for delegation (RFC 8693 §2): the authenticated (confidential) client presents a
 * person's access token aimed at it or one of its resources and gets a new one for one of its own
 * registered resources, with no more scope, its own `client_id`, and `act: {sub: <client_id>}`
 * (earlier actors nested), or the agent an `actor_token` names. Allowed only while both clients'
 * access rules admit the person and the person's approval of this client covers the scopes and
 * the resource; a DPoP-bound subject token is exchanged only with a proof by its key, and the new
 * token is bound to that key. An agent may exchange its own token ({@link agentExchange}). The
 * exchange is a grant of its own, bounded by the subject's, and leaves a `token.exchanged` receipt.
 */
export async function tokenExchangeGrant(
  services: Services,
  client: StoredClient,
  body: Record<string, unknown>,
  proof: VerifiedDpopProof | null,
): Promise<GrantResult> {
  // A public client proves nothing about who asks: anyone holding a token it was given could
  // turn it into one for another audience (docs/security.md#token-exchange).
  if (client.type === 'public')
    throw oauthError('unauthorized_client', 'a public client cannot exchange tokens: register a confidential one');
  const request = readExchangeRequest(body);
  const subject = await verifyToken(services, request.subjectToken, 'invalid_grant', 'subject_token');
  if (isAgentToken(subject)) return agentExchange(services, client, body, proof, request, subject);
  // RFC 8693 §2.1: the subject token was presented to this client, as its audience.
  if (!aimedAt(client, subject.aud))
    throw oauthError('invalid_grant', 'the subject_token is not aimed at this client or one of its resources');
  // RFC 9449 §6: a bound token is only proved by its key, and what it becomes stays bound to it.
  if (subject.cnf?.jkt !== undefined && subject.cnf.jkt !== proof?.jkt)
    throw oauthError('invalid_dpop_proof', 'the subject_token is DPoP-bound: send a DPoP proof made with its key', {
      status: 400,
    });
  const subjectGrantId = grantIdOfJti(subject.jti);
  const subjectGrant = subjectGrantId ? await services.storage.oidc.getGrant(subjectGrantId) : null;
  if (!subjectGrant) throw oauthError('invalid_grant', 'the subject_token has no grant to exchange');
  const subjectClient = await services.storage.clients.get(subjectGrant.clientId);
  if (subjectClient) await requireClientAccess(services, subjectClient, subjectGrant.identityId, 'token_exchange');
  await requireClientAccess(services, client, subjectGrant.identityId, 'token_exchange');
  const api = await apiAccessFor(services, client, body.resource);
  const resource = checkResource(
    api && !client.metadata.resources.includes(api.resource)
      ? [...client.metadata.resources, api.resource]
      : client.metadata.resources,
    body.resource,
  );
  if (resource === undefined)
    throw oauthError('invalid_target', 'name the resource the new token is for (one registered for this client)');
  // No wider than the subject token, and only what the new audience understands: the provider's
  // scopes and those its API declares for this client (docs/apis.md#tokens).
  const held = scopesForAudience(
    narrowScopes(parseScope(subject.scope), request.scopes),
    api?.scopes.map((s) => s.name) ?? [],
  );
  // The client the person gave the token to delegates within it; any other asks the consent gate.
  const scopes =
    subject.client_id === client.clientId
      ? held
      : await consentedScopes(services, client, subjectGrant.identityId, {
          held,
          asked: request.scopes !== undefined,
          resource,
        });
  const actor = request.actor
    ? await verifyActor(services, client, request.actor, subjectGrant.identityId, proof)
    : null;
  const act = actorClaim(actor ? actor.agentId : client.clientId, subject.act);
  const now = services.now();
  const grant: StoredGrant = {
    ...subjectGrant,
    grantId: randomId('gr'),
    // Revoking the grant it came from (or one further up) ends it too: grantStands walks the chain.
    sourceGrantId: subjectGrant.grantId,
    clientId: client.clientId,
    scope: formatScope(scopes),
    resource,
    createdAt: now,
    // Never outlives what it was exchanged from; no refresh token is issued for it.
    expiresAt: Math.min(subjectGrant.expiresAt, now + services.config.lifetimes.accessToken * 1000),
  };
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.oidc.insertGrant(grant);
    return services.events.record(tx, {
      type: 'token.exchanged',
      at: now,
      outcome: 'success',
      clientId: client.clientId,
      subjectClientId: subject.client_id,
      identityId: grant.identityId,
      grantId: grant.grantId,
      fromGrantId: subjectGrant.grantId,
      ...(actor ? { agentId: actor.agentId } : {}),
      resource,
      actors: actorChain(act),
    });
  });
  const minted = await mintTokens(services, {
    grant,
    scopes,
    resource,
    // A bound subject's proof was made by its key (above); an unbound one's binds the new token to the prover.
    dpopJkt: subject.cnf?.jkt ?? proof?.jkt ?? null,
    nonce: null,
    idToken: false,
    act,
  });
  return { minted, scopes, ...(receipt ? { receipt } : {}), proof };
}

/**
 * The consent gate's own question for an exchange (docs/security.md#token-exchange): the person's
 * approval of the exchanging client must cover the new token's scopes and its resource, as an
 * authorization request of that client would need. Without `scope`, the subject token's scopes
 * that approval covers; with it, every one asked must be covered, else `invalid_grant`.
 */
async function consentedScopes(
  services: Services,
  client: StoredClient,
  identityId: string,
  wanted: { held: string[]; asked: boolean; resource: string },
): Promise<string[]> {
  const approval =
    client.metadata.first_party === true ? null : await approvalOf(services, identityId, client.clientId);
  const scopes = wanted.asked || !approval ? wanted.held : wanted.held.filter((s) => approval.scopes.includes(s));
  const standing = await askConsent(services, identityId, clientParty(client), { scopes, resource: wanted.resource });
  if (!standing.approved)
    throw oauthError(
      'invalid_grant',
      "the person's approval of this client does not cover these scopes and this resource",
    );
  return scopes;
}

/**
 * An agent exchanges its own access token (docs/agents.md#token-exchange): the request carries a
 * DPoP proof by the agent key (the token is bound to it), names a resource its owner approved for
 * it at this client, asks no more scope than both the token and that grant hold, and gets an
 * agent token (`svc.principal` kept) under that grant, bound to the same key, with `act` naming
 * the agent, never outliving the token it came from.
 */
async function agentExchange(
  services: Services,
  client: StoredClient,
  body: Record<string, unknown>,
  proof: VerifiedDpopProof | null,
  request: ExchangeRequest,
  subject: AgentTokenClaims,
): Promise<GrantResult> {
  if (!client.metadata.access.agents) throw oauthError('unauthorized_client', 'this client does not admit agents');
  if (request.actor)
    throw oauthError('invalid_request', 'an agent exchanging its own token is the actor: send no actor_token');
  if (!proof || proof.jkt !== subject.cnf?.jkt)
    throw oauthError('invalid_dpop_proof', "an agent's token is exchanged only with a DPoP proof by the agent key", {
      status: 400,
    });
  const agent = await services.storage.agents.get(subject.sub);
  if (!agent || agent.state !== 'active') throw oauthError('invalid_grant', 'the agent is not active');
  const resource = checkResource(client.metadata.resources, body.resource);
  if (resource === undefined)
    throw oauthError('invalid_target', 'name the resource the new token is for (one registered for this client)');
  const target = (await services.storage.agents.listGrants(agent.agentId)).find(
    (g) =>
      g.revokedAt === null && g.clientId === client.clientId && g.ownerId === agent.ownerId && g.resource === resource,
  );
  if (!target)
    throw oauthError('invalid_grant', 'the owner approved no grant for this agent at this client and resource');
  const granted = parseScope(target.scope);
  // Without `scope`, what both the token and the target grant hold (RFC 8693 §2.1 leaves it to us).
  const scopes = narrowScopes(parseScope(subject.scope), request.scopes).filter(
    (s) => request.scopes !== undefined || granted.includes(s),
  );
  if (scopes.length === 0)
    throw oauthError('invalid_scope', 'the token and the grant for this resource share no scope');
  const outside = scopes.find((s) => !granted.includes(s));
  if (outside !== undefined)
    throw oauthError('invalid_scope', `scope ${outside.slice(0, 60)} was not granted to this agent for this resource`);
  const act = actorClaim(agent.agentId, subject.act);
  const now = services.now();
  const lifetime = Math.min(services.config.lifetimes.accessToken, Math.floor(subject.exp - now / 1000));
  if (lifetime <= 0) throw oauthError('invalid_grant', 'the subject_token expires now');
  const claims = buildAccessTokenClaims({
    issuer: services.config.issuer,
    subject: agent.agentId,
    clientId: client.clientId,
    now,
    lifetimeSeconds: lifetime,
    authTime: typeof subject.auth_time === 'number' ? subject.auth_time * 1000 : now,
    provedAssurance: 'passkey',
    ...(subject.acr ? { reportedAssurance: subject.acr } : {}),
    amr: ['pop'],
    principal: { type: 'agent', id: agent.agentId as `agt_${string}`, owner: agent.ownerId, kind: agent.subjectKind },
    scopes,
    jti: `${target.grantId}.${randomToken(12)}`,
    dpopJkt: agent.jkt,
    resource,
    act,
  });
  const accessToken = await signAccessToken(claims, services.keys.current());
  const { receipt } = await services.storage.transaction((tx) =>
    services.events.record(tx, {
      type: 'token.exchanged',
      at: now,
      outcome: 'success',
      clientId: client.clientId,
      subjectClientId: subject.client_id,
      identityId: agent.ownerId,
      agentId: agent.agentId,
      grantId: target.grantId,
      fromGrantId: grantIdOfJti(subject.jti)!,
      resource,
      actors: actorChain(act),
    }),
  );
  return {
    minted: { accessToken, expiresIn: lifetime },
    scopes,
    ...(receipt ? { receipt } : {}),
    proof,
  };
}
