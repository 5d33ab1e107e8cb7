/**
 * Failures of the pure protocol modules (DPoP proofs, signed gateway configs and evidence, ledger
 * checkpoints), before any service decides what a caller is told. One base with a closed `code`
 * union: callers tell failures apart by `code` (`isProtocolError(error, 'invalid_dpop_proof')`),
 * never by class or message. The message says what is wrong in words fit for the party that sent
 * the document; it never carries a library's own error text.
 */

/** RFC 9449 §7.1 and §8: the DPoP `error` codes. */
export type DpopErrorCode = 'invalid_dpop_proof' | 'use_dpop_nonce';
/** Why a gateway refuses a signed config (docs/gateway.md#signed-config). */
export type ConfigRefusal = 'bad_signature' | 'malformed' | 'expired' | 'rollback' | 'equivocation' | 'wrong_audience';
/** Signed evidence a gateway reported that the control plane cannot accept. */
export type EvidenceRefusal = 'invalid_evidence';
/** A ledger checkpoint that is malformed, out of order or not signed by the ledger's key. */
export type CheckpointRefusal = 'invalid_checkpoint';

export type ProtocolErrorCode = DpopErrorCode | ConfigRefusal | EvidenceRefusal | CheckpointRefusal;

export class ProtocolError<C extends ProtocolErrorCode = ProtocolErrorCode> extends Error {
  override name = 'ProtocolError';

  constructor(
    readonly code: C,
    message: string,
  ) {
    super(message);
  }
}

const CODES: ReadonlySet<string> = new Set<ProtocolErrorCode>([
  'invalid_dpop_proof',
  'use_dpop_nonce',
  'bad_signature',
  'malformed',
  'expired',
  'rollback',
  'equivocation',
  'wrong_audience',
  'invalid_evidence',
  'invalid_checkpoint',
]);

/** A ProtocolError, optionally one of `codes`. */
export function isProtocolError<C extends ProtocolErrorCode>(error: unknown, ...codes: C[]): error is ProtocolError<C> {
  if (!(error instanceof Error) || error.name !== 'ProtocolError') return false;
  const code = (error as ProtocolError).code;
  return CODES.has(code) && (codes.length === 0 || (codes as string[]).includes(code));
}
