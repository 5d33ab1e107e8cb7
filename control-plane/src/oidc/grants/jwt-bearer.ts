import type { VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import { oauthError } from '#lib/oauth/errors.js';
import { formatScope, parseScope } from '#lib/oauth/scope.js';
import { buildAccessTokenClaims } from '#lib/tokens/claims.js';
import { signAccessToken } from '#lib/tokens/sign-token.js';
import { randomToken } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../../context.js';
import type { StoredClient } from '../../storage/interface.js';
import { verifyAgentAssertion } from './agent-assertion.js';

type Services = Pick<ControlPlaneServices, 'config' | 'storage' | 'state' | 'events' | 'keys' | 'now'>;

function param(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > 8192)
    throw oauthError('invalid_request', `${name} must be a non-empty string`);
  return value;
}

/**
 * The RFC 7523 JWT-bearer grant for agents (docs/agents.md#tokens): the agent signs an
 * assertion with its key (`iss` = `sub` = agent id, `aud` = the token endpoint, `exp` within
 * 5 minutes, one-use `jti`) and a DPoP proof with the same key; the token is issued under a
 * live grant its owner approved for this client, bound to the key (`cnf.jkt`).
 */
export async function jwtBearerGrant(
  services: Services,
  client: StoredClient,
  body: Record<string, unknown>,
  proof: VerifiedDpopProof | null,
) {
  const assertion = param(body, 'assertion');
  if (!assertion) throw oauthError('invalid_request', 'assertion is required');
  if (!proof)
    throw oauthError('invalid_dpop_proof', 'agent tokens are DPoP-bound: send a DPoP proof made with the agent key', {
      status: 400,
    });
  const agent = await verifyAgentAssertion(services, assertion, 'invalid_grant', (agent) => {
    if (proof.jkt !== agent.jkt)
      throw oauthError('invalid_dpop_proof', 'the DPoP proof must be made with the agent key', { status: 400 });
  });
  const now = services.now();
  const grants = (await services.storage.agents.listGrants(agent.agentId)).filter(
    (g) => g.revokedAt === null && g.clientId === client.clientId && g.ownerId === agent.ownerId,
  );
  const resource = param(body, 'resource') ?? null;
  const grant =
    grants.find((g) => g.resource === resource) ?? (resource === null && grants.length === 1 ? grants[0] : undefined);
  if (!grant) throw oauthError('invalid_grant', 'the owner approved no grant for this agent, client and resource');
  const granted = parseScope(grant.scope);
  const requested = body.scope === undefined ? granted : parseScope(body.scope);
  const extra = requested.find((s) => !granted.includes(s));
  if (extra !== undefined)
    throw oauthError('invalid_scope', `scope ${extra.slice(0, 60)} was not granted to this agent`);
  const key = services.keys.current();
  const lifetime = services.config.lifetimes.accessToken;
  const claims = buildAccessTokenClaims({
    issuer: services.config.issuer,
    subject: agent.agentId,
    clientId: client.clientId,
    now,
    lifetimeSeconds: lifetime,
    authTime: now,
    // The agent proved its key, not a human sign-in: `passkey` is the ceiling (docs/agents.md#tokens).
    provedAssurance: 'passkey',
    amr: ['pop'],
    principal: { type: 'agent', id: agent.agentId as `agt_${string}`, owner: agent.ownerId, kind: agent.subjectKind },
    scopes: requested,
    jti: `${grant.grantId}.${randomToken(12)}`,
    dpopJkt: agent.jkt,
    ...(grant.resource ? { resource: grant.resource } : {}),
  });
  const accessToken = await signAccessToken(claims, key);
  const { receipt } = await services.storage.transaction((tx) =>
    services.events.record(tx, {
      type: 'agent.token_issued',
      at: now,
      outcome: 'success',
      agentId: agent.agentId,
      ownerId: agent.ownerId,
      grantId: grant.grantId,
      clientId: client.clientId,
      jkt: agent.jkt,
    }),
  );
  return { accessToken, expiresIn: lifetime, scope: formatScope(requested), ...(receipt ? { receipt } : {}) };
}
