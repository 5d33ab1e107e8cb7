import { keepDeclared } from '#lib/apis/api-declaration.js';
import { apiAccessFor } from '../../apis/apis.js';
import type { VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import { oauthError } from '#lib/oauth/errors.js';
import { parseScope } from '#lib/oauth/scope.js';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { StoredClient, StoredGrant, StoredRefreshToken } from '../../storage/interface.js';
import { rotatesRefreshTokens } from '#lib/oauth/fapi.js';
import { countedEmails } from '../../orgs/claimed-addresses.js';
import { claimsOf, membershipClaims, mintTokens } from '../tokens.js';
import { stringParam } from '../token-request.js';
import {
  requireClientAccess,
  resourceFor,
  revokeFamily,
  type GrantResult,
  type GrantServices,
} from './grant-records.js';

/**
 * The refresh-token grant (RFC 6749 §6) with rotation: every check that can fail without the
 * token being at fault runs before it is spent, so a refused request leaves it working; the
 * token, its grant, the account and the session are read together; the spend is one
 * conditional update in the atomic step that writes its successor and the receipt (a token used
 * concurrently rotates once), and a rotated-out token that comes back revokes its whole family
 * (RFC 9700 §4.14.2) right after.
 */
export async function refreshTokenGrant(
  services: GrantServices,
  client: StoredClient,
  body: Record<string, unknown>,
  proof: VerifiedDpopProof | null,
): Promise<GrantResult> {
  const { storage, config, events } = services;
  const presented = stringParam(body, 'refresh_token');
  if (!presented) throw oauthError('invalid_request', 'refresh_token is required');
  const now = services.now();
  const hash = sha256Hex(presented);
  const read = await storage.findRefreshWithSubject(hash, now);
  if (!read) throw oauthError('invalid_grant', 'the refresh token is unknown');
  const { token: found, grant, subject } = read;
  if (grant.clientId !== client.clientId)
    throw oauthError('invalid_grant', 'the refresh token was issued to another client');
  // Checked before the token is used up, so someone without the key cannot burn it.
  if (found.dpopJkt !== null && (!proof || proof.jkt !== found.dpopJkt)) {
    throw oauthError('invalid_grant', 'the refresh token is bound to a DPoP key: send a proof made with that key');
  }
  if (grant.revokedAt !== null) throw oauthError('invalid_grant', 'the refresh token was revoked');
  // Also before it is used up: a request the grant does not allow leaves the token working.
  // An API's scopes last while the API still admits the client (docs/apis.md#who-may-ask).
  const granted = keepDeclared(
    parseScope(grant.scope),
    (await apiAccessFor(services, client, grant.resource))?.scopes.map((s) => s.name) ?? [],
  );
  const requested = body.scope === undefined ? granted : parseScope(body.scope);
  const extra = requested.find((scope) => !granted.includes(scope));
  const idToken = requested.includes('openid');
  const claims = idToken
    ? {
        ...claimsOf(subject.identity, await countedEmails(storage, subject.identity, subject.emails)),
        ...(await membershipClaims(storage, grant.identityId, requested)),
      }
    : undefined;
  if (subject.state !== 'active') throw oauthError('invalid_grant', 'the account is disabled or deleted');
  if (extra !== undefined) throw oauthError('invalid_scope', `scope ${extra.slice(0, 60)} was not granted`);
  if (!granted.includes('offline_access') || !client.metadata.grant_types.includes('refresh_token'))
    throw oauthError('invalid_grant', 'the grant does not allow refresh');
  const resource = resourceFor(client, body, grant.resource);
  // Checked before the token is spent: a membership restored later finds it working again.
  await requireClientAccess(services, client, grant.identityId, 'refresh');
  // A grant ends with the session that started it, unless the user approved offline access.
  if (!grant.offline && !subject.sessionLive) {
    await revokeFamily(services, grant, 'session_ended');
    throw oauthError('invalid_grant', 'the sign-in that started this grant has ended');
  }
  // A token seen spent already is a reuse: no spend to attempt (one that loses a race to a
  // concurrent rotation is found out by the spend below).
  if (found.usedAt !== null) throw await refuseReuse(services, grant);
  // The tokens this refresh answers with, whether the refresh token rotates or stays.
  const mint = () =>
    mintTokens(services, {
      grant,
      scopes: requested,
      resource,
      dpopJkt: proof?.jkt ?? null,
      nonce: null,
      idToken,
      ...(claims ? { claims } : {}),
    });
  if (!rotatesRefreshTokens(client.metadata)) {
    const { receipt } = await keepRefreshToken(services, client, read, proof);
    return { minted: await mint(), scopes: requested, ...(receipt ? { receipt } : {}), proof };
  }
  const refreshToken = randomToken(32);
  const expired = found.idleExpiresAt <= now || grant.expiresAt <= now;
  // The spend lands with the rotation it allows (one statement on PostgreSQL).
  const { consumption, written } = await storage.rotateRefreshToken(hash, now, async (tx) => {
    // Spent all the same: an expired token stays used up.
    if (expired) return null;
    // Use at the app is use of the sign-in: the session's idle limit moves on (never its absolute one).
    if (!grant.offline) await tx.sessions.touch(grant.sessionId, now, now + config.lifetimes.sessionIdle * 1000);
    await tx.oidc.insertRefreshToken({
      tokenHash: sha256Hex(refreshToken),
      grantId: grant.grantId,
      dpopJkt: found.dpopJkt,
      createdAt: now,
      idleExpiresAt: Math.min(grant.expiresAt, now + config.lifetimes.refreshTokenIdle * 1000),
      usedAt: null,
    });
    return events.record(tx, {
      type: 'token.refreshed',
      at: now,
      outcome: 'success',
      clientId: client.clientId,
      identityId: grant.identityId,
      grantId: grant.grantId,
      dpop: proof !== null,
    });
  });
  if (consumption.status !== 'consumed') throw await refuseReuse(services, grant);
  if (!written) throw oauthError('invalid_grant', 'the refresh token has expired');
  const { receipt } = written;
  return { minted: await mint(), scopes: requested, refreshToken, ...(receipt ? { receipt } : {}), proof };
}

/**
 * A refresh token that does not rotate (FAPI 2.0 SP §5.3.2, `rotatesRefreshTokens`) stays the
 * client's: its idle end moves on with each use (never past the grant's absolute end), with the
 * session's like a rotation, and the use is receipted as one.
 */
async function keepRefreshToken(
  services: GrantServices,
  client: StoredClient,
  { token, grant }: { token: StoredRefreshToken; grant: StoredGrant },
  proof: VerifiedDpopProof | null,
): Promise<{ receipt?: string }> {
  const { config, events } = services;
  const now = services.now();
  if (token.idleExpiresAt <= now || grant.expiresAt <= now)
    throw oauthError('invalid_grant', 'the refresh token has expired');
  const written = await services.storage.transaction(async (tx) => {
    const idleEnd = Math.min(grant.expiresAt, now + config.lifetimes.refreshTokenIdle * 1000);
    if (!(await tx.oidc.extendRefreshToken(token.tokenHash, idleEnd))) return null;
    if (!grant.offline) await tx.sessions.touch(grant.sessionId, now, now + config.lifetimes.sessionIdle * 1000);
    return events.record(tx, {
      type: 'token.refreshed',
      at: now,
      outcome: 'success',
      clientId: client.clientId,
      identityId: grant.identityId,
      grantId: grant.grantId,
      dpop: proof !== null,
    });
  });
  if (!written) throw oauthError('invalid_grant', 'the refresh token is unknown');
  return written;
}

/** RFC 9700 §4.14.2: a rotated-out token came back, so one of its holders is not the client. */
async function refuseReuse(services: GrantServices, grant: StoredGrant) {
  await revokeFamily(services, grant, 'refresh_reuse');
  return oauthError('invalid_grant', 'the refresh token was used already; its whole family is revoked');
}
