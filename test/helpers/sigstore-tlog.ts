import { createRequire } from 'node:module';
import { createPublicKey, type KeyObject } from 'node:crypto';

/**
 * sigstore-js's own C2SP checkpoint and RFC 6962 inclusion verifiers (npm `@sigstore/verify`):
 * internal modules, not re-exported by the package's index, so they are loaded by module path.
 * Code no one here wrote, to check what Keyplane serves.
 */
interface SigstoreCheckpoint {
  origin: string;
  logSize: bigint;
  logHash: Buffer;
}
interface SigstoreTlog {
  verifyCheckpoint(
    entry: { inclusionProof: { checkpoint: { envelope: string } } },
    tlogs: Array<{ logID: Buffer; baseURL: string; publicKey: KeyObject }>,
  ): SigstoreCheckpoint;
  verifyMerkleInclusion(
    entry: { inclusionProof: { logIndex: string; hashes: Buffer[] }; canonicalizedBody: Buffer },
    checkpoint: { logSize: bigint; logHash: Buffer },
  ): void;
}

const require = createRequire(import.meta.url);
export const sigstore: SigstoreTlog = {
  verifyCheckpoint: (require('@sigstore/verify/dist/tlog/checkpoint.js') as SigstoreTlog).verifyCheckpoint,
  verifyMerkleInclusion: (require('@sigstore/verify/dist/tlog/merkle.js') as SigstoreTlog).verifyMerkleInclusion,
};

/**
 * Verifies a signed note with sigstore-js: the log is known to it by the note key's C2SP key ID
 * as the first four bytes of its log ID, its name as the base URL, and its Ed25519 public key.
 */
export function verifyNoteWithSigstore(
  note: string,
  key: { name: string; keyId: Buffer; publicKey: Buffer },
): SigstoreCheckpoint {
  const publicKey = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: key.publicKey.toString('base64url') },
    format: 'jwk',
  });
  return sigstore.verifyCheckpoint({ inclusionProof: { checkpoint: { envelope: note } } }, [
    { logID: Buffer.concat([key.keyId, Buffer.alloc(28)]), baseURL: key.name, publicKey },
  ]);
}
