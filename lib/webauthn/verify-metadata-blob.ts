import { SettingsService, type MetadataStatement } from '@simplewebauthn/server';
import { verifyMDSBlob } from '@simplewebauthn/server/helpers';

/**
 * The FIDO Alliance's BLOB signing roots as SimpleWebAuthn bundles them (GlobalSign Root CA R3 and
 * R46), read before anything replaces them: the roots a BLOB chains to unless a test root is configured.
 */
export const FIDO_MDS_ROOTS: readonly string[] = Object.freeze([
  ...SettingsService.getRootCertificates({ identifier: 'mds' }),
]);

/** What a verified BLOB says of one authenticator. */
export interface MetadataEntry {
  aaguid: string;
  description: string;
  /** `revoked` for REVOKED, `compromised` for a key compromise or user-verification bypass; null otherwise. */
  refusal: 'revoked' | 'compromised' | null;
  /** The status reports' statuses, as the BLOB lists them. */
  statuses: string[];
}

export interface VerifiedMetadata {
  /** The BLOB's serial number (`no`): a newer BLOB has a greater one. */
  no: number;
  /** When the BLOB says the next one is due (YYYY-MM-DD). */
  nextUpdate: string;
  entries: Map<string, MetadataEntry>;
  /** The FIDO2 statements, for SimpleWebAuthn's attestation checks. */
  statements: MetadataStatement[];
}

// FIDO MDS 3.0 §3.1.4 AuthenticatorStatus: the statuses that mean its attestations can no longer be trusted.
const COMPROMISED = new Set([
  'USER_VERIFICATION_BYPASS',
  'ATTESTATION_KEY_COMPROMISE',
  'USER_KEY_REMOTE_COMPROMISE',
  'USER_KEY_PHYSICAL_COMPROMISE',
]);

/**
 * Verifies a FIDO Metadata Service BLOB (a JWT) with SimpleWebAuthn's `verifyMDSBlob`: its x5c chain
 * to one of `roots`, then its signature; and reads its FIDO2 entries with their status. Throws when
 * the chain or signature does not hold, or the text is no BLOB (a load's failure, never a request's).
 */
export async function verifyMetadataBlob(
  blob: string,
  roots: readonly string[] = FIDO_MDS_ROOTS,
): Promise<VerifiedMetadata> {
  // verifyMDSBlob reads the roots from SimpleWebAuthn's settings synchronously before its first await,
  // so setting them just before the call cannot race another load in this process.
  SettingsService.setRootCertificates({ identifier: 'mds', certificates: [...roots] });
  let verified: Awaited<ReturnType<typeof verifyMDSBlob>>;
  try {
    verified = await verifyMDSBlob(blob.trim());
  } catch (error) {
    throw new Error(`the metadata BLOB does not verify: ${(error as Error).message}`, { cause: error });
  }
  const { payload, statements } = verified;
  const entries = new Map<string, MetadataEntry>();
  for (const entry of payload.entries) {
    if (!entry.aaguid) continue;
    const statuses = (entry.statusReports ?? []).map((r) => String(r.status));
    const refusal = statuses.some((s) => COMPROMISED.has(s))
      ? 'compromised'
      : statuses.includes('REVOKED')
        ? 'revoked'
        : null;
    const aaguid = entry.aaguid.toLowerCase();
    entries.set(aaguid, {
      aaguid,
      description: entry.metadataStatement?.description ?? aaguid,
      refusal,
      statuses,
    });
  }
  return { no: payload.no, nextUpdate: payload.nextUpdate, entries, statements };
}
