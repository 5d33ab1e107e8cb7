import t from 'tap';
import { reasonOf, rejectionReason } from '../../helpers/reason-of.js';
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { createHash } from 'node:crypto';
import {
  checkRunProofShape,
  runProofHash,
  runProofSigningInput,
  verifyRunProof,
  type RunProof,
} from '#lib/agents/run-proof.js';

const h = (s: string) => createHash('sha256').update(s).digest('hex');

async function signed(privateKey: CryptoKey, alg: string, overrides: Record<string, unknown> = {}) {
  const body = {
    format: 'svc-agent-run-proof-v1',
    agent_id: 'agt_1',
    challenge_id: 'apc_1',
    task_commitment: h('task'),
    input_commitment: h('in'),
    output_commitment: h('out'),
    started_at: '2026-11-22T12:00:00Z',
    finished_at: '2026-11-22T12:00:05Z',
    ...overrides,
  };
  const sig = await new CompactSign(new TextEncoder().encode(runProofSigningInput(body as RunProof)))
    .setProtectedHeader({ alg })
    .sign(privateKey);
  return { ...body, sig } as RunProof;
}

t.test('verifies a run proof signed by the agent key (ES256 and EdDSA)', async (t) => {
  for (const alg of ['ES256', 'EdDSA'] as const) {
    const { publicKey, privateKey } = await generateKeyPair(alg);
    const proof = await signed(privateKey, alg);
    const ok = await verifyRunProof(proof, {
      agentId: 'agt_1',
      challengeId: 'apc_1',
      jwk: await exportJWK(publicKey),
      alg,
    });
    t.equal(ok.sig, proof.sig);
    t.match(runProofHash(proof), /^[0-9a-f]{64}$/);
  }
});

t.test('refuses raw content, unknown members, bad commitments and bad times', async (t) => {
  const { privateKey } = await generateKeyPair('ES256');
  const good = await signed(privateKey, 'ES256');
  t.equal(
    reasonOf(() => checkRunProofShape({ ...good, input: 'the raw prompt' })),
    'run_proof_invalid',
    'raw content',
  );
  t.equal(
    reasonOf(() => checkRunProofShape({ ...good, output: 'x' })),
    'run_proof_invalid',
  );
  t.equal(
    reasonOf(() => checkRunProofShape({ ...good, extra: 1 })),
    'run_proof_invalid',
  );
  t.equal(
    reasonOf(() => checkRunProofShape({ ...good, format: 'v0' })),
    'run_proof_invalid',
  );
  t.equal(
    reasonOf(() => checkRunProofShape({ ...good, task_commitment: 'NOTHEX' })),
    'run_proof_invalid',
  );
  t.equal(
    reasonOf(() => checkRunProofShape({ ...good, started_at: 'yesterday' })),
    'run_proof_invalid',
  );
  t.equal(
    reasonOf(() => checkRunProofShape({ ...good, finished_at: '2026-11-22T11:00:00Z' })),
    'run_proof_invalid',
  );
  t.equal(
    reasonOf(() => checkRunProofShape({ ...good, agent_id: 7 })),
    'run_proof_invalid',
  );
  t.equal(
    reasonOf(() => checkRunProofShape('x')),
    'run_proof_invalid',
  );
});

t.test(
  'refuses a bad signature, another key, another agent or challenge, and a signature over other content',
  async (t) => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const other = await generateKeyPair('ES256');
    const jwk = await exportJWK(publicKey);
    const opts = { agentId: 'agt_1', challengeId: 'apc_1', jwk, alg: 'ES256' as const };
    const good = await signed(privateKey, 'ES256');
    t.equal(await rejectionReason(verifyRunProof(await signed(other.privateKey, 'ES256'), opts)), 'run_proof_invalid');
    t.equal(
      await rejectionReason(verifyRunProof({ ...good, sig: good.sig.slice(0, -4) + 'AAAA' }, opts)),
      'run_proof_invalid',
    );
    t.equal(await rejectionReason(verifyRunProof(good, { ...opts, agentId: 'agt_2' })), 'run_proof_invalid');
    t.equal(await rejectionReason(verifyRunProof(good, { ...opts, challengeId: 'apc_2' })), 'run_proof_invalid');
    t.equal(
      await rejectionReason(verifyRunProof({ ...good, output_commitment: h('other') }, opts)),
      'run_proof_invalid',
    );
  },
);
