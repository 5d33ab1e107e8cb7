import type { VerifiedDpopProof } from '../../../../lib/dpop/verify-dpop-proof.js';
import { checkCodeExchange } from '../../../../lib/oauth/code-exchange.js';
import { oauthError } from '../../../../lib/oauth/errors.js';
import { parseScope } from '../../../../lib/oauth/scope.js';
import { randomId, randomToken } from '../../../../lib/util/random.js';
import { sha256Hex } from '../../../../lib/util/sha256.js';
import { isAccountActive } from '../../accounts/lifecycle.js';
import type { StoredClient, StoredGrant } from '../../storage/types.js';
import { mintTokens, userClaims } from '../tokens.js';
import { stringParam } from '../token-request.js';
import { resourceFor, revokeFamily, type GrantResult, type GrantServices } from './shared.js';

/**
 * The authorization-code grant (RFC 6749 §4.1.3, PKCE RFC 7636 §4.6): the code is spent first
 * (one-time, atomically, so two replicas redeeming it at once redeem it once), then checked
 * against client, redirect URI, verifier, DPoP key and the live sign-in; a second use revokes
 * everything issued from it. The reads that do not depend on each other go out together, and
 * the writes (grant, code → grant link, refresh token, receipt) land in one transaction.
 */
export async function authorizationCodeGrant(services: GrantServices, client: StoredClient, body: Record<string, unknown>, proof: VerifiedDpopProof | null): Promise<GrantResult> {
  const { storage, config, events } = services;
  const code = stringParam(body, 'code');
  const redirectUri = stringParam(body, 'redirect_uri');
  const verifier = stringParam(body, 'code_verifier');
  if (!code) throw oauthError('invalid_request', 'code is required');
  if (!redirectUri) throw oauthError('invalid_request', 'redirect_uri is required');
  if (!verifier) throw oauthError('invalid_request', 'code_verifier is required (PKCE)');
  const now = services.now();
  const consumed = await storage.oidc.consumeCode(sha256Hex(code), now);
  if (consumed.status === 'unknown') throw oauthError('invalid_grant', 'the authorization code is unknown');
  if (consumed.status === 'replayed') {
    // RFC 6749 §4.1.2 / RFC 9700 §4.5: a second use revokes everything issued from the code.
    const grant = consumed.code.grantId ? await storage.oidc.getGrant(consumed.code.grantId) : null;
    if (grant) await revokeFamily(services, grant, 'code_replay');
    throw oauthError('invalid_grant', 'the authorization code was used already; tokens issued from it are revoked');
  }
  const stored = consumed.code;
  const scopes = parseScope(stored.scope);
  const idToken = scopes.includes('openid');
  const [active, sessionLive, claims] = await Promise.all([
    isAccountActive(storage, stored.identityId),
    storage.sessions.isLive(stored.sessionId, now),
    idToken ? userClaims(services, stored.identityId) : undefined,
  ]);
  if (!active) throw oauthError('invalid_grant', 'the account is disabled or deleted');
  checkCodeExchange(stored, { clientId: client.clientId, redirectUri, verifier, proofJkt: proof?.jkt ?? null, now, sessionLive });
  const resource = resourceFor(client, body, stored.resource);
  const withRefresh = scopes.includes('offline_access') && client.metadata.grant_types.includes('refresh_token');
  const grant: StoredGrant = {
    grantId: randomId('gr'),
    clientId: client.clientId,
    identityId: stored.identityId,
    sessionId: stored.sessionId,
    scope: stored.scope,
    resource: stored.resource,
    assurance: stored.assurance,
    amr: stored.amr,
    authTime: stored.authTime,
    createdAt: now,
    expiresAt: now + config.lifetimes.refreshTokenAbsolute * 1000,
    revokedAt: null,
    offline: stored.offline,
  };
  const minted = await mintTokens(services, { grant, scopes, resource, dpopJkt: proof?.jkt ?? null, nonce: stored.nonce, idToken, ...(claims ? { claims } : {}) });
  const refreshToken = withRefresh ? randomToken(32) : undefined;
  const { receipt } = await storage.transaction(async (tx) => {
    await tx.oidc.insertGrant(grant);
    await tx.oidc.setCodeGrant(stored.codeHash, grant.grantId);
    if (refreshToken) {
      await tx.oidc.insertRefreshToken({
        tokenHash: sha256Hex(refreshToken), grantId: grant.grantId,
        // RFC 9449 §5: refresh tokens of public clients are bound to the DPoP key.
        dpopJkt: client.type === 'public' && proof ? proof.jkt : null,
        createdAt: now, idleExpiresAt: Math.min(grant.expiresAt, now + config.lifetimes.refreshTokenIdle * 1000), usedAt: null,
      });
    }
    return events.record(tx, {
      type: 'token.issued', at: now, outcome: 'success', clientId: client.clientId, identityId: grant.identityId,
      grantId: grant.grantId, dpop: proof !== null, refresh: refreshToken !== undefined, resource,
    });
  });
  return { minted, scopes, ...(refreshToken ? { refreshToken } : {}), ...(receipt ? { receipt } : {}), proof };
}
