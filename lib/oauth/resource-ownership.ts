import { oauthError } from './errors.js';

/**
 * Who may name a resource. A resource URI whose origin is a registered gateway's public URL
 * (the origin of its redirect URIs, `<public-url>/_gate/callback`) is that gateway's: a token
 * for it is a token the gateway would accept, so only the gateway's owner (or the operator)
 * may register a client that asks for one. Anyone else naming it is refused with
 * `invalid_target` (RFC 8707 §2), before any token could be minted for it.
 */

export interface GatewayOwner {
  clientId: string;
  /** The identity that registered the gateway client; null for the operator. */
  ownerId: string | null;
  redirectUris: readonly string[];
}

/** Who registers or updates: the operator (admin token) may name any resource. */
export type ResourceRegistrar = { admin: true } | { admin: false; ownerId: string };

function originOf(uri: string): string | null {
  try {
    return new URL(uri).origin;
  } catch {
    return null;
  }
}

/** The first resource of `resources` that belongs to a gateway of someone else, or null. */
export function findForeignGatewayResource(
  resources: readonly string[],
  gateways: readonly GatewayOwner[],
  registrar: ResourceRegistrar,
): string | null {
  if (registrar.admin) return null;
  for (const resource of resources) {
    const origin = originOf(resource);
    if (origin === null) continue;
    const owner = gateways.find((gateway) => gateway.redirectUris.some((uri) => originOf(uri) === origin));
    if (owner && owner.ownerId !== registrar.ownerId) return resource;
  }
  return null;
}

/** Throws `invalid_target` when a resource belongs to another owner's gateway. */
export function checkResourceOwnership(
  resources: readonly string[],
  gateways: readonly GatewayOwner[],
  registrar: ResourceRegistrar,
): void {
  const foreign = findForeignGatewayResource(resources, gateways, registrar);
  if (foreign !== null) {
    throw oauthError(
      'invalid_target',
      `resources: ${foreign.slice(0, 100)} is the URL of a gateway registered by someone else; only its owner may name it`,
    );
  }
}
