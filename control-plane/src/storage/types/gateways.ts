import type { GatewayPolicy } from '#lib/oauth/client-metadata.js';
import type { VerifiedEvidence } from '#lib/gateway-protocol/evidence.js';

// Managed gateways: issued configs (declared) and evidence (observed), kept apart (docs/gateway.md#evidence).

/** One signed gateway config as issued; a version, once issued, is never re-signed with other content. */
export interface IssuedGatewayConfig {
  clientId: string;
  version: number;
  /** The compact JWS, served byte for byte. */
  jws: string;
  /** SHA-256 hex of the JWS: what the gateway's evidence reports. */
  hash: string;
  /** SHA-256 hex of the policy's RFC 8785 canonical JSON. */
  policyHash: string;
  policy: GatewayPolicy;
  /** The control-plane key that signed it. */
  kid: string;
  issuedAt: number;
  expiresAt: number;
}

/** The newest signed evidence report of one gateway instance, as verified on arrival. */
export interface StoredGatewayEvidence extends VerifiedEvidence {
  receivedAt: number;
  /** The compact JWS as it arrived. */
  jws: string;
}

export interface GatewayStore {
  /** The highest version issued to the client, or null. */
  latestConfig(clientId: string): Promise<IssuedGatewayConfig | null>;
  /**
   * A number that changes, in the same transaction, with every write to what a gateway's member
   * directory is built from (memberships, roles, orgs, usernames and aliases, account state,
   * accounts created or deleted): the key under which a built directory may be reused.
   */
  directoryGeneration(): Promise<number>;
  /** False when the client has that version already (versions are unique per client). */
  insertConfig(config: IssuedGatewayConfig): Promise<boolean>;
  /**
   * Keeps the newest report per (client, instance): a report issued before the stored one
   * changes nothing (false), so a replayed old report cannot hide a newer one.
   */
  recordEvidence(evidence: StoredGatewayEvidence): Promise<boolean>;
  /** The client's instances, most recently heard from first (at most `limit`). */
  listEvidence(clientId: string, limit: number): Promise<StoredGatewayEvidence[]>;
  /** Drops the client's reports that expired before `expiredBefore` (ms): instances long gone. Returns how many. */
  forgetEvidence(clientId: string, expiredBefore: number): Promise<number>;
}
