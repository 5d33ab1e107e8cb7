import type { VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import { checkCodeExchange } from '#lib/oauth/code-exchange.js';
import { oauthError } from '#lib/oauth/errors.js';
import { parseScope } from '#lib/oauth/scope.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { StoredAuthorizationCode, StoredClient, StoredGrant } from '../../storage/interface.js';
import { countedEmails } from '../../orgs/claimed-addresses.js';
import { claimsOf, membershipClaims, mintTokens } from '../tokens.js';
import { stringParam } from '../token-request.js';
import {
  requireClientAccess,
  resourceFor,
  revokeFamily,
  writeNewGrant,
  type GrantResult,
  type GrantServices,
} from './grant-records.js';

/**
 * The authorization-code grant (RFC 6749 §4.1.3, PKCE RFC 7636 §4.6): the code is checked
 * against client, redirect URI, verifier, DPoP key and the live sign-in, then spent in the
 * same atomic step that writes what the exchange creates (grant, refresh token, receipt; one
 * statement on PostgreSQL): one conditional update both spends it and links it to the grant,
 * so two replicas redeeming it at once redeem it once. A code that fails a check is spent all
 * the same. A code found spent is a replay and revokes everything issued from it; one spent by
 * a concurrent exchange between the read and the spend is refused without revoking the
 * winner's grant. What the exchange checks about the account and the sign-in is read with the
 * code (`findCodeWithSubject`).
 */
export async function authorizationCodeGrant(
  services: GrantServices,
  client: StoredClient,
  body: Record<string, unknown>,
  proof: VerifiedDpopProof | null,
): Promise<GrantResult> {
  const { storage, config } = services;
  const code = stringParam(body, 'code');
  const redirectUri = stringParam(body, 'redirect_uri');
  const verifier = stringParam(body, 'code_verifier');
  if (!code) throw oauthError('invalid_request', 'code is required');
  if (!redirectUri) throw oauthError('invalid_request', 'redirect_uri is required');
  if (!verifier) throw oauthError('invalid_request', 'code_verifier is required (PKCE)');
  const now = services.now();
  const codeHash = sha256Hex(code);
  const read = await storage.findCodeWithSubject(codeHash, now);
  if (!read) throw oauthError('invalid_grant', 'the authorization code is unknown');
  const { code: stored, subject } = read;
  if (stored.consumedAt !== null) return refuseReplay(services, stored);
  const scopes = parseScope(stored.scope);
  const idToken = scopes.includes('openid');
  const claims = idToken
    ? {
        ...claimsOf(subject.identity, await countedEmails(storage, subject.identity, subject.emails)),
        ...(await membershipClaims(storage, stored.identityId, scopes)),
      }
    : undefined;
  let resource: string | null;
  try {
    if (subject.state !== 'active') throw oauthError('invalid_grant', 'the account is disabled or deleted');
    checkCodeExchange(stored, {
      clientId: client.clientId,
      redirectUri,
      verifier,
      proofJkt: proof?.jkt ?? null,
      now,
      sessionLive: subject.sessionLive,
    });
    resource = resourceFor(client, body, stored.resource);
    await requireClientAccess(services, client, stored.identityId, 'code');
  } catch (error) {
    // A refused exchange uses the code up too.
    if ((await storage.oidc.consumeCode(codeHash, now)).status === 'replayed') throw lostRace();
    throw error;
  }
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
  const refreshToken = withRefresh ? randomToken(32) : undefined;
  const { consumption, written } = await storage.redeemCode(codeHash, now, grant.grantId, (tx) =>
    writeNewGrant(services, tx, { grant, client, proof, refreshToken, resource, now }),
  );
  // Spent since it was read: nothing was written.
  if (consumption.status === 'replayed') throw lostRace();
  if (!written) throw oauthError('invalid_grant', 'the authorization code is unknown');
  const { receipt } = written;
  const minted = await mintTokens(services, {
    grant,
    scopes,
    resource,
    dpopJkt: proof?.jkt ?? null,
    nonce: stored.nonce,
    idToken,
    ...(claims ? { claims } : {}),
  });
  return { minted, scopes, ...(refreshToken ? { refreshToken } : {}), ...(receipt ? { receipt } : {}), proof };
}

/** A concurrent exchange spent the code between this one's read and its spend. */
function lostRace() {
  return oauthError('invalid_grant', 'the authorization code was used already');
}

/** RFC 6749 §4.1.2 / RFC 9700 §4.5: a second use of a code revokes everything issued from it. */
async function refuseReplay(services: GrantServices, code: StoredAuthorizationCode): Promise<never> {
  const grant = code.grantId ? await services.storage.oidc.getGrant(code.grantId) : null;
  if (grant) await revokeFamily(services, grant, 'code_replay');
  throw oauthError('invalid_grant', 'the authorization code was used already; tokens issued from it are revoked');
}
