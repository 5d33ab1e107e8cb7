import type { KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import type { webcrypto } from 'node:crypto';
import { importPublicJwk, signJwt, verifyJwt } from '../crypto/jwt.js';
import { fail } from '../errors/keyplane-error.js';
import { canonicalJson } from '../ledger/canonical-json.js';
import { sha256Hex } from '../crypto/sha256.js';
import type { AgentKeyAlgorithm } from './jwk.js';

export const RUN_PROOF_FORMAT = 'svc-agent-run-proof-v1';

/** The members a run proof has, and no others. */
const MEMBERS = [
  'format',
  'agent_id',
  'challenge_id',
  'task_commitment',
  'input_commitment',
  'output_commitment',
  'started_at',
  'finished_at',
  'sig',
] as const;
/** Names that would carry the raw run instead of a commitment to it. */
const RAW_CONTENT = ['task', 'input', 'output', 'prompt', 'content', 'messages', 'result', 'data', 'text'];
const COMMITMENT = /^[0-9a-f]{64}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export interface RunProof {
  format: typeof RUN_PROOF_FORMAT;
  agent_id: string;
  challenge_id: string;
  task_commitment: string;
  input_commitment: string;
  output_commitment: string;
  started_at: string;
  finished_at: string;
  /** Compact JWS by the agent key whose payload is the RFC 8785 form of every other member. */
  sig: string;
}

/**
 * Checks the shape of a `svc-agent-run-proof-v1`: exactly its members, commitments as lower-case
 * hex SHA-256, RFC 3339 times in order. A raw task, input or output field is refused outright:
 * the run itself stays with the client (docs/agents.md#over-http).
 */
export function checkRunProofShape(input: unknown): RunProof {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw fail('run_proof_invalid', 'run_proof must be an object');
  const proof = input as Record<string, unknown>;
  const raw = Object.keys(proof).filter((name) => RAW_CONTENT.includes(name));
  if (raw.length > 0)
    throw fail('run_proof_invalid', `run_proof carries raw content (${raw.join(', ')}): send only SHA-256 commitments`);
  const extra = Object.keys(proof).filter((name) => !(MEMBERS as readonly string[]).includes(name));
  if (extra.length > 0)
    throw fail('run_proof_invalid', `run_proof has unknown members: ${extra.slice(0, 5).join(', ')}`);
  if (proof.format !== RUN_PROOF_FORMAT)
    throw fail('run_proof_invalid', `run_proof.format must be ${RUN_PROOF_FORMAT}`);
  for (const name of ['agent_id', 'challenge_id', 'sig'] as const) {
    if (
      typeof proof[name] !== 'string' ||
      (proof[name] as string).length === 0 ||
      (proof[name] as string).length > 8192
    )
      throw fail('run_proof_invalid', `run_proof.${name} must be a string`);
  }
  for (const name of ['task_commitment', 'input_commitment', 'output_commitment'] as const) {
    if (typeof proof[name] !== 'string' || !COMMITMENT.test(proof[name] as string))
      throw fail('run_proof_invalid', `run_proof.${name} must be a lower-case hex SHA-256`);
  }
  for (const name of ['started_at', 'finished_at'] as const) {
    if (
      typeof proof[name] !== 'string' ||
      !RFC3339.test(proof[name] as string) ||
      Number.isNaN(Date.parse(proof[name] as string))
    )
      throw fail('run_proof_invalid', `run_proof.${name} must be an RFC 3339 time`);
  }
  if (Date.parse(proof.finished_at as string) < Date.parse(proof.started_at as string))
    throw fail('run_proof_invalid', 'run_proof.finished_at is before started_at');
  return proof as unknown as RunProof;
}

/** The bytes the agent signs: the RFC 8785 form of the proof without `sig`. */
export function runProofSigningInput(proof: Omit<RunProof, 'sig'> | RunProof): string {
  const { sig: _sig, ...rest } = proof as RunProof;
  return canonicalJson(rest);
}

/**
 * The `sig` of a run proof: a compact JWS by the agent key over the signing input. The canonical
 * form is parsed and signed as claims; JSON.stringify writes it back byte for byte (its members
 * are fixed names holding strings, already in RFC 8785 order), which `verifyRunProof` checks.
 */
export function signRunProof(
  proof: Omit<RunProof, 'sig'>,
  key: KeyObject | webcrypto.CryptoKey,
  alg: AgentKeyAlgorithm,
): string {
  return signJwt({}, JSON.parse(runProofSigningInput(proof)) as Record<string, unknown>, key, alg);
}

/** SHA-256 (hex) of the whole run proof's RFC 8785 form: the `run_proof_hash` of a run token. */
export function runProofHash(proof: RunProof): string {
  return sha256Hex(canonicalJson(proof));
}

export interface VerifyRunProofOptions {
  agentId: string;
  challengeId: string;
  jwk: JWK;
  alg: AgentKeyAlgorithm;
  /** Imports the agent key; a cache may stand in for `importJWK` (the key is derived from `jwk` alone). */
  importKey?: (jwk: JWK, alg: AgentKeyAlgorithm) => Promise<KeyObject>;
}

/**
 * Verifies a run proof against the agent and the challenge it answers: shape, ids, and `sig`, a
 * compact JWS by the agent key (its algorithm only) whose payload is exactly the signing input.
 */
export async function verifyRunProof(input: unknown, options: VerifyRunProofOptions): Promise<RunProof> {
  const proof = checkRunProofShape(input);
  if (proof.agent_id !== options.agentId) throw fail('run_proof_invalid', 'run_proof.agent_id names another agent');
  if (proof.challenge_id !== options.challengeId)
    throw fail('run_proof_invalid', 'run_proof.challenge_id differs from the challenge answered');
  let signed: string | null;
  try {
    const key = options.importKey
      ? await options.importKey(options.jwk, options.alg)
      : importPublicJwk(options.jwk as Record<string, unknown>);
    // The payload bytes as signed (the middle part), not the parsed claims: they must be exactly
    // the RFC 8785 form of the proof.
    const { input } = verifyJwt(proof.sig, key, { alg: options.alg });
    signed = Buffer.from(input.slice(input.indexOf('.') + 1), 'base64url').toString('utf8');
  } catch {
    signed = null;
  }
  if (signed === null) throw fail('run_proof_invalid', 'run_proof.sig is not a valid signature by the agent key');
  if (signed !== runProofSigningInput(proof))
    throw fail('run_proof_invalid', 'run_proof.sig signs other content than the proof');
  return proof;
}
