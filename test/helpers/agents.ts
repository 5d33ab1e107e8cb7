import { randomBytes } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { FastifyInstance } from 'fastify';
import { TEST_ISSUER } from './build.js';
import type { Browser } from './signed-in.js';
import type { DomainEvent } from '../../control-plane/src/events/types.js';
import type { StoredAgent } from '../../control-plane/src/storage/interface.js';

export interface AgentKey {
  jwk: JWK;
  jkt: string;
  alg: 'ES256' | 'EdDSA';
  privateKey: CryptoKey;
  /** A DPoP proof for `path` on the test issuer (or for an absolute URL). */
  proof(path: string, o?: { nonce?: string; htm?: string; iat?: number; accessToken?: string }): Promise<string>;
}

export async function agentKey(alg: 'ES256' | 'EdDSA' = 'ES256'): Promise<AgentKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, alg === 'EdDSA' ? { crv: 'Ed25519' } : {});
  const jwk = await exportJWK(publicKey);
  const jkt = await calculateJwkThumbprint(jwk, 'sha256');
  return {
    jwk,
    jkt,
    alg,
    privateKey,
    proof: async (path, o = {}) => {
      const { computeAth } = await import('#lib/dpop/verify-dpop-proof.js');
      return new SignJWT({
        htm: o.htm ?? 'POST',
        htu: path.startsWith('http') ? path : `${TEST_ISSUER}${path}`,
        jti: randomBytes(12).toString('base64url'),
        iat: o.iat ?? Math.floor(Date.now() / 1000),
        ...(o.nonce ? { nonce: o.nonce } : {}),
        ...(o.accessToken ? { ath: computeAth(o.accessToken) } : {}),
      })
        .setProtectedHeader({ alg, typ: 'dpop+jwt', jwk })
        .sign(privateKey);
    },
  };
}

/**
 * Posts `payload` to `path` with a DPoP proof by `key`, fetching the server nonce first (RFC 9449 §8).
 * `now` is the control plane's clock: a test clock held still must not make the proof's `iat` look future.
 */
export async function postWithKeyProof(
  send: (
    headers: Record<string, string>,
  ) => Promise<{ statusCode: number; headers: Record<string, unknown>; json(): any }>,
  key: AgentKey,
  path: string,
  now?: () => number,
) {
  const iat = () => (now ? { iat: Math.floor(now() / 1000) } : {});
  const first = await send({ dpop: await key.proof(path, iat()) });
  const nonce = first.headers['dpop-nonce'];
  if (first.statusCode !== 401 || typeof nonce !== 'string') return first;
  return send({ dpop: await key.proof(path, { nonce, ...iat() }) });
}

/** Enrolls an agent end to end through HTTP for the owner signed in on `owner`. */
export async function enrollAgent(
  app: FastifyInstance,
  owner: Browser,
  options: { key?: AgentKey; visibility?: string; name?: string } = {},
) {
  const key = options.key ?? (await agentKey());
  const begun = await app.inject({
    method: 'POST',
    url: '/auth/agents/proof/enroll/begin',
    payload: {
      name: options.name ?? 'Build bot',
      subjectKind: 'ai_agent',
      publicJwk: key.jwk,
      visibility: options.visibility ?? 'public',
    },
  });
  if (begun.statusCode !== 200) throw new Error(`begin: ${begun.body}`);
  const { enrollment_id, owner_code } = begun.json();
  const approved = await owner.post('/auth/agents/proof/enroll/approve', { enrollment_id, owner_code });
  if (approved.statusCode !== 200) throw new Error(`approve: ${approved.body}`);
  const done = await postWithKeyProof(
    (headers) =>
      app.inject({ method: 'POST', url: '/auth/agents/proof/enroll/complete', headers, payload: { enrollment_id } }),
    key,
    '/auth/agents/proof/enroll/complete',
    () => app.kp.now(),
  );
  if (done.statusCode !== 200) throw new Error(`complete: ${JSON.stringify(done.json())}`);
  const body = done.json() as { agent_id: string; proof_id: string; proof_url: string };
  return {
    key,
    agentId: body.agent_id,
    proofId: body.proof_id,
    proofUrl: body.proof_url,
    enrollmentId: enrollment_id as string,
  };
}

/** Every domain event recorded from now on (to prove a refusal appended nothing). */
export function recordEvents(services: {
  events: { subscribe(fn: (tx: unknown, event: DomainEvent) => void): void };
}): DomainEvent[] {
  const seen: DomainEvent[] = [];
  services.events.subscribe((_tx, event) => void seen.push(event));
  return seen;
}

/** An agent row as stored, for tests that set one up without its enrollment. */
export function storedAgent(id: string, extra: Partial<StoredAgent> = {}): StoredAgent {
  return {
    agentId: id,
    proofId: `p-${id}`,
    ownerId: 'usr_a',
    name: 'bot',
    subjectKind: 'ai_agent',
    publicJwk: { kty: 'OKP', crv: 'Ed25519', x: 'x' },
    jkt: 'j'.repeat(43),
    alg: 'EdDSA',
    state: 'active',
    visibility: 'public',
    declared: {},
    resumeNeedsKey: false,
    keyProvenAt: 1,
    ownerApprovedAt: 1,
    lastProofAt: null,
    createdAt: 1,
    updatedAt: 1,
    ...extra,
  };
}
