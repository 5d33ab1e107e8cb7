import { oauthError } from '#lib/oauth/errors.js';
import { checkResource } from '#lib/oauth/resource.js';
import type { VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import type { ControlPlaneServices } from '../../context.js';
import type { StoredClient, StoredGrant, Stores } from '../../storage/interface.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { Minted } from '../tokens.js';
import { checkClientAccess } from '../../clients/sign-in-access.js';
import type { AccessPath } from '../../events/types.js';

/** What the authorization-code and refresh-token grants run on. */
export type GrantServices = Pick<ControlPlaneServices, 'config' | 'storage' | 'events' | 'keys' | 'now'>;

/** What a grant hands back to the token endpoint to shape its answer. */
export interface GrantResult {
  minted: Minted;
  scopes: string[];
  refreshToken?: string;
  receipt?: string;
  proof: VerifiedDpopProof | null;
}

type RevocationCause = 'code_replay' | 'refresh_reuse' | 'session_ended';

/** Revokes a grant (its whole family) with a receipt. */
export async function revokeFamily(services: GrantServices, grant: StoredGrant, cause: RevocationCause): Promise<void> {
  const now = services.now();
  await services.storage.transaction(async (tx) => {
    if (!(await tx.oidc.revokeGrant(grant.grantId, now))) return;
    await services.events.record(tx, {
      type: 'token.family_revoked',
      at: now,
      outcome: 'success',
      clientId: grant.clientId,
      identityId: grant.identityId,
      grantId: grant.grantId,
      cause,
    });
  });
}

/**
 * RFC 8707 at the token endpoint: a resource must be registered, and exactly the one the grant
 * was authorized for (docs/security.md#resources-only-as-approved). The grant's own resource,
 * checked when it was authorized, may always be named again (an MCP route's resource is not the
 * client's registered one, docs/gateway.md#mcp-routes).
 */
export function resourceFor(
  client: StoredClient,
  body: Record<string, unknown>,
  granted: string | null,
): string | null {
  // The grant's own resource stays requestable (it may be an MCP route's, which no client registers).
  if (
    granted !== null &&
    (body.resource === granted ||
      (Array.isArray(body.resource) && body.resource.length === 1 && body.resource[0] === granted))
  )
    return granted;
  const requested = checkResource(client.metadata.resources, body.resource);
  if (requested === undefined) return granted;
  // RFC 8707 §2.2 leaves it to us: a resource the approval page never named is never granted,
  // even one registered for the client (the person approved a token for the client itself).
  if (requested !== granted)
    throw oauthError(
      'invalid_target',
      granted === null
        ? 'the resource was not named when this was authorized; authorize again with it'
        : 'the resource differs from the one authorized',
    );
  return requested;
}

/**
 * Writes a new grant, its refresh token when one is issued and the `token.issued` receipt, inside
 * the caller's transaction (the code and device grants each consume their one-time secret in it).
 */
export async function writeNewGrant(
  services: Pick<GrantServices, 'config' | 'events'>,
  tx: Stores,
  issued: {
    grant: StoredGrant;
    client: StoredClient;
    proof: VerifiedDpopProof | null;
    refreshToken: string | undefined;
    /** The resource the tokens are for (the grant's, or the narrower one asked at the token endpoint). */
    resource: string | null;
    now: number;
  },
): Promise<{ receipt?: string }> {
  const { grant, client, proof, refreshToken, now } = issued;
  await tx.oidc.insertGrant(grant);
  if (refreshToken) {
    await tx.oidc.insertRefreshToken({
      tokenHash: sha256Hex(refreshToken),
      grantId: grant.grantId,
      // RFC 9449 §5: refresh tokens of public clients are bound to the DPoP key.
      dpopJkt: client.type === 'public' && proof ? proof.jkt : null,
      createdAt: now,
      idleExpiresAt: Math.min(grant.expiresAt, now + services.config.lifetimes.refreshTokenIdle * 1000),
      usedAt: null,
    });
  }
  return services.events.record(tx, {
    type: 'token.issued',
    at: now,
    outcome: 'success',
    clientId: client.clientId,
    identityId: grant.identityId,
    grantId: grant.grantId,
    dpop: proof !== null,
    refresh: refreshToken !== undefined,
    resource: issued.resource,
  });
}

/**
 * The token endpoint's side of "may this person get a token for this client" (the one check,
 * `checkClientAccess`): a grant minting again from an earlier approval is refused `invalid_grant`
 * once the client's access rules no longer admit the account (a `signin.access_denied` receipt).
 */
export async function requireClientAccess(
  services: Pick<GrantServices, 'storage' | 'events' | 'now'>,
  client: StoredClient,
  identityId: string,
  path: AccessPath,
): Promise<void> {
  const access = await checkClientAccess(services, client, identityId, path);
  if (!access.allowed) throw oauthError('invalid_grant', "the client's access rules no longer admit this account");
}
