import { fail } from '#lib/errors/keyplane-error.js';
import { rateLimited } from '#lib/errors/rate-limited.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { equalDigests } from '#lib/crypto/constant-equals.js';
import type { ControlPlaneServices } from '../context.js';
import type { Actor } from '../events/types.js';
import type { StoredOrg, StoredScimToken } from '../storage/interface.js';
import { requireOwnerAtSensitive } from '../orgs/membership.js';
import type { OwnerRequest } from '../orgs/mail-domains.js';
import type { OrgServices } from '../orgs/membership.js';

/**
 * An org's SCIM tokens (docs/scim.md#tokens): created by an owner at `sensitive` and shown once,
 * stored as the SHA-256 of their secret, listed with their last use, revocable; a token reaches
 * its own org only, and every call with it is throttled per token.
 */

/** The bearer value: `kpscim_<tokenId>.<secret>`, so that the look-up is by id. */
const TOKEN = /^kpscim_(sct_[A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

export interface ScimTokenView {
  tokenId: string;
  createdAt: string;
  createdBy: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function viewScimToken(token: StoredScimToken): ScimTokenView {
  return {
    tokenId: token.tokenId,
    createdAt: iso(token.createdAt)!,
    createdBy: token.createdBy,
    lastUsedAt: iso(token.lastUsedAt),
    revokedAt: iso(token.revokedAt),
  };
}

export async function createScimToken(
  services: OrgServices,
  who: OwnerRequest,
): Promise<{ tokenId: string; token: string; receipt?: string }> {
  requireOwnerAtSensitive(who.membership, who.assurance);
  const orgId = who.membership.org.orgId;
  const tokenId = randomId('sct');
  const secret = randomToken(32);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    await tx.scim.addToken({
      tokenId,
      orgId,
      secretHash: sha256Hex(secret),
      createdBy: who.identityId,
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
    });
    const { receipt } = await services.events.record(tx, {
      type: 'scim.token_created',
      at: now,
      outcome: 'success',
      actor: { type: 'person', id: who.identityId },
      orgId,
      tokenId,
    });
    return { tokenId, token: `kpscim_${tokenId}.${secret}`, ...(receipt ? { receipt } : {}) };
  });
}

export async function listScimTokens(services: OrgServices, who: OwnerRequest): Promise<ScimTokenView[]> {
  requireOwnerAtSensitive(who.membership, who.assurance);
  return orgScimTokens(services, who.membership.org.orgId);
}

/** The org's tokens, revoked ones too, for whoever the caller checked may read them (its owner, an operator). */
export async function orgScimTokens(services: Pick<OrgServices, 'storage'>, orgId: string): Promise<ScimTokenView[]> {
  return (await services.storage.scim.tokens(orgId)).map(viewScimToken);
}

export async function revokeScimToken(
  services: OrgServices,
  who: OwnerRequest,
  tokenId: string,
): Promise<{ receipt?: string }> {
  requireOwnerAtSensitive(who.membership, who.assurance);
  return revokeOrgScimToken(services, who.membership.org.orgId, tokenId, { type: 'person', id: who.identityId });
}

/**
 * Revokes one of the org's tokens, acting as `actor`: the org's owner ({@link revokeScimToken}) or
 * an operator in the console, whose route checked its role and assurance.
 */
export async function revokeOrgScimToken(
  services: OrgServices,
  orgId: string,
  tokenId: string,
  actor: Actor,
): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.scim.revokeToken(orgId, tokenId, now)))
      throw fail('not_found', 'this organization has no live SCIM token with this id');
    return services.events.record(tx, {
      type: 'scim.token_revoked',
      at: now,
      outcome: 'success',
      actor,
      orgId,
      tokenId,
    });
  });
}

export type ScimAuthServices = Pick<ControlPlaneServices, 'storage' | 'state' | 'now' | 'config'>;

/** The org a SCIM call acts on, and the token it came with. */
export interface ScimCaller {
  org: StoredOrg;
  tokenId: string;
}

const refused = () =>
  fail('unauthorized', 'a live SCIM token of this organization is needed', {
    headers: { 'www-authenticate': 'Bearer realm="scim"' },
  });

/**
 * Checks `Authorization: Bearer kpscim_…` for the org in the path: the token must exist, be live,
 * belong to that org (another org's token gets the same 401 as an unknown one), and its secret
 * must match its stored hash (compared in constant time). Then the per-token throttle.
 */
export async function authenticateScimToken(
  services: ScimAuthServices,
  slug: string,
  authorization: string | undefined,
): Promise<ScimCaller> {
  const match = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
  const parts = match ? TOKEN.exec(match[1]!) : null;
  if (!parts) throw refused();
  const [, tokenId, secret] = parts as unknown as [string, string, string];
  const stored = await services.storage.scim.token(tokenId);
  const presented = sha256Hex(secret);
  const matches = equalDigests(presented, stored?.secretHash ?? '0'.repeat(64));
  if (!stored || !matches || stored.revokedAt !== null) throw refused();
  const org = await services.storage.orgs.getBySlug(slug);
  if (!org || org.orgId !== stored.orgId) throw refused();
  const { count, ttlMs } = await services.state.incrWithTtl(`scim:token:${tokenId}`, 60_000);
  if (count > services.config.scim.perTokenPerMinute)
    throw rateLimited(ttlMs, 'too many SCIM calls with this token; slow down');
  await services.storage.scim.touchToken(tokenId, services.now());
  return { org, tokenId };
}
