import { isKeyplaneError } from '../../../../lib/errors/keyplane-error.js';
import type { VerifiedDpopProof } from '../../../../lib/dpop/verify-dpop-proof.js';
import { oauthError } from '../../../../lib/oauth/errors.js';
import { checkResource } from '../../../../lib/oauth/resource.js';
import { parseScope, formatScope } from '../../../../lib/oauth/scope.js';
import { actorChain, actorClaim, narrowScopes, readExchangeRequest } from '../../../../lib/oauth/token-exchange.js';
import { randomId } from '../../../../lib/util/random.js';
import type { StoredClient, StoredGrant } from '../../storage/types.js';
import { grantIdOfJti, mintTokens, verifyAccessToken, type AccessTokenClaimsRead } from '../tokens.js';
import type { GrantResult, GrantServices } from './shared.js';
import { approvalOf } from '../../consent/gate.js';

/**
 * Token exchange for delegation (RFC 8693 §2): the authenticated client presents a person's
 * access token and gets a new one for one of its own registered resources, with no more scope,
 * its own `client_id`, and `act: {sub: <client_id>}` (earlier actors nested). Allowed only when
 * the person gave this client the subject token, or approved this client themselves; agent
 * tokens are not exchanged. The exchange is a grant of its own, bounded by the subject's, and
 * leaves a `token.exchanged` receipt.
 */
export async function tokenExchangeGrant(
  services: GrantServices,
  client: StoredClient,
  body: Record<string, unknown>,
  proof: VerifiedDpopProof | null,
): Promise<GrantResult> {
  const request = readExchangeRequest(body);
  let subject: AccessTokenClaimsRead;
  try {
    subject = await verifyAccessToken(services, request.subjectToken);
  } catch (error) {
    if (isKeyplaneError(error) && error.reason === 'invalid_token')
      throw oauthError('invalid_grant', 'the subject_token is not an active access token of this server');
    throw error;
  }
  const subjectGrantId = grantIdOfJti(subject.jti);
  const subjectGrant = subjectGrantId ? await services.storage.oidc.getGrant(subjectGrantId) : null;
  if (!subjectGrant)
    throw oauthError('invalid_grant', "agents' tokens are not exchanged; the agent asks for its own grant");
  const consented =
    subject.client_id === client.clientId || (await approvalOf(services, subject.sub, client.clientId)) !== null;
  if (!consented)
    throw oauthError(
      'invalid_grant',
      'the person has not approved this client, and the subject_token was issued to another',
    );
  const resource = checkResource(client.metadata.resources, body.resource);
  if (resource === undefined)
    throw oauthError('invalid_target', 'name the resource the new token is for (one registered for this client)');
  const scopes = narrowScopes(parseScope(subject.scope), request.scopes);
  const act = actorClaim(client.clientId, subject.act);
  const now = services.now();
  const grant: StoredGrant = {
    ...subjectGrant,
    grantId: randomId('gr'),
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
      resource,
      actors: actorChain(act),
    });
  });
  const minted = await mintTokens(services, {
    grant,
    scopes,
    resource,
    dpopJkt: proof?.jkt ?? null,
    nonce: null,
    idToken: false,
    act,
  });
  return { minted, scopes, ...(receipt ? { receipt } : {}), proof };
}
