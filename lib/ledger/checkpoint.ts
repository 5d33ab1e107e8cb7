import { ProtocolError } from '../errors/protocol-error.js';
import type { KeyObject } from 'node:crypto';
import { decodeProtectedHeader, type CompactVerifyGetKey, type CryptoKey, type JWK } from 'jose';
import { checkJws, signJwt } from '../crypto/jwt.js';
import { sha256Hex } from '../crypto/sha256.js';
import { canonicalJson } from './canonical-json.js';

/** `typ` of checkpoint JWSs: a checkpoint is never mistaken for a token or another signed object. */
export const CHECKPOINT_TYP = 'keyplane-checkpoint+jwt';

/** The signed statement about one epoch (docs/ledger.md). */
export interface CheckpointPayload {
  /** 1 for the first epoch, then +1 each. */
  epoch: number;
  /** The epoch's sorted Merkle tree head, lower-case hex. */
  root: string;
  size: number;
  /** SHA-256 hex of the previous checkpoint's compact JWS; null for epoch 1. */
  prev: string | null;
  /** When the epoch was sealed, RFC 3339 (UTC). */
  at: string;
}

/** A checkpoint that is malformed, out of order or not signed by the ledger's key (`invalid_checkpoint`). */
export class CheckpointError extends ProtocolError<'invalid_checkpoint'> {
  constructor(message: string) {
    super('invalid_checkpoint', message);
  }
}

const HEX64 = /^[0-9a-f]{64}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** The chain link: SHA-256 hex of the compact JWS string (its ASCII bytes). */
export function checkpointHash(compactJws: string): string {
  return sha256Hex(compactJws);
}

/** Builds the payload of epoch `epoch`, chained to `previous` (the prior compact JWS, or null). */
export function buildCheckpointPayload(input: {
  epoch: number;
  root: string;
  size: number;
  previous: string | null;
  now: number;
}): CheckpointPayload {
  if (input.epoch === 1 ? input.previous !== null : input.previous === null) {
    throw new CheckpointError('epoch 1 has no previous checkpoint, every later epoch has one');
  }
  return {
    epoch: input.epoch,
    root: input.root,
    size: input.size,
    prev: input.previous === null ? null : checkpointHash(input.previous),
    at: new Date(input.now).toISOString(),
  };
}

/** Signs a checkpoint as a compact ES256 JWS with `kid` and `typ` in the protected header. */
export async function signCheckpoint(
  payload: CheckpointPayload,
  key: { kid: string; privateKey: KeyObject | CryptoKey },
): Promise<string> {
  assertPayload(payload);
  // The canonical form parsed back: its members (strings, integers, null) are written back by
  // JSON.stringify byte for byte, in the same order.
  return signJwt(
    { kid: key.kid, typ: CHECKPOINT_TYP },
    JSON.parse(canonicalJson(payload)) as Record<string, unknown>,
    key.privateKey,
    'ES256',
  );
}

/** Reads a checkpoint without verifying its signature (to pick the key or show it). */
export function decodeCheckpoint(compactJws: string): { kid: string; payload: CheckpointPayload } {
  const parts = compactJws.split('.');
  if (parts.length !== 3) throw new CheckpointError('a checkpoint is a compact JWS of three parts');
  let header: ReturnType<typeof decodeProtectedHeader>;
  let payload: unknown;
  try {
    header = decodeProtectedHeader(compactJws);
    payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
  } catch {
    throw new CheckpointError('the checkpoint is not a readable JWS');
  }
  if (header.alg !== 'ES256') throw new CheckpointError('the checkpoint is not signed with ES256');
  if (header.typ !== CHECKPOINT_TYP) throw new CheckpointError(`the checkpoint's typ is not ${CHECKPOINT_TYP}`);
  if (typeof header.kid !== 'string' || header.kid === '') throw new CheckpointError('the checkpoint names no kid');
  assertPayload(payload);
  return { kid: header.kid, payload };
}

export type CheckpointKeys = KeyObject | CryptoKey | JWK | CompactVerifyGetKey;

/**
 * Verifies the ES256 signature (against a key or a JWKS getter such as jose's
 * `createLocalJWKSet`) and the payload's shape; returns the payload.
 */
export async function verifyCheckpoint(compactJws: string, keys: CheckpointKeys): Promise<CheckpointPayload> {
  const { payload } = decodeCheckpoint(compactJws);
  try {
    await checkJws(compactJws, keys, { algorithms: ['ES256'] });
  } catch (error) {
    throw new CheckpointError(`the checkpoint signature does not verify (${(error as Error).message})`);
  }
  return payload;
}

/** True when `earlier` is the checkpoint directly before `later` in the chain. */
export function isPreviousCheckpoint(
  later: CheckpointPayload,
  earlierJws: string,
  earlier: CheckpointPayload,
): boolean {
  return earlier.epoch === later.epoch - 1 && later.prev === checkpointHash(earlierJws);
}

function assertPayload(value: unknown): asserts value is CheckpointPayload {
  const p = value as Record<string, unknown>;
  if (typeof p !== 'object' || p === null || Array.isArray(p))
    throw new CheckpointError('the checkpoint payload is not an object');
  const names = Object.keys(p).sort().join(',');
  if (names !== 'at,epoch,prev,root,size')
    throw new CheckpointError('the checkpoint payload must hold exactly epoch, root, size, prev and at');
  if (!Number.isSafeInteger(p['epoch']) || (p['epoch'] as number) < 1)
    throw new CheckpointError('epoch must be an integer from 1');
  if (!Number.isSafeInteger(p['size']) || (p['size'] as number) < 0)
    throw new CheckpointError('size must be a non-negative integer');
  if (typeof p['root'] !== 'string' || !HEX64.test(p['root']))
    throw new CheckpointError('root must be 64 lower-case hex characters');
  if (p['epoch'] === 1 ? p['prev'] !== null : typeof p['prev'] !== 'string' || !HEX64.test(p['prev'])) {
    throw new CheckpointError('prev must be null for epoch 1 and 64 lower-case hex characters after');
  }
  if (typeof p['at'] !== 'string' || !RFC3339.test(p['at']) || Number.isNaN(Date.parse(p['at'])))
    throw new CheckpointError('at must be an RFC 3339 time');
}
