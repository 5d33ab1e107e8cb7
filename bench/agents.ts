/**
 * bench:agents — agent-proof verify and run calls per second on one core.
 *
 * Method: the control plane runs in-process and is driven through fastify's `inject`, one
 * request at a time (no sockets), like bench:token (shared set-up in bench/harness.ts).
 * Challenges and the agent's DPoP proofs (and run proofs) are made outside the timed section,
 * in batches; the timed section is the server's work per call: read the agent, take the
 * challenge, check the DPoP proof (one signature check; a run also checks the run proof's),
 * sign the token (one ES256 signature). Every answer is checked for status 200, so a failing
 * call cannot look fast. The one-core figure is calls per CPU-second of this process; the wall
 * rate is printed beside it (it falls with whatever else the machine runs).
 */
import { createHash } from 'node:crypto';
import { signRunProof } from '#lib/agents/run-proof.js';
import { nodeKey, signJwt } from '#lib/crypto/jwt.js';
import { agentKey, enrollAgent } from '../test/helpers/agents.js';
import { benchControlPlane, benchTap, describeRun, es256Bound, measure } from './harness.js';

const TARGET = 1000;
const h = (s: string) => createHash('sha256').update(s).digest('hex');

const { tap, runTeardowns } = benchTap();
describeRun('bench:agents');
try {
  const bound = await es256Bound();
  const { app, browser } = await benchControlPlane(tap);
  const agent = await enrollAgent(app, browser, { key: await agentKey('ES256') });
  // The client side signs through fast-jwt too, so that preparing a batch stays cheap.
  const signer = nodeKey(agent.key.privateKey);
  const dpop = (path: string, nonce: string) =>
    signJwt(
      { typ: 'dpop+jwt', jwk: agent.key.jwk },
      {
        htm: 'POST',
        htu: `http://localhost:4400${path}`,
        jti: h(Math.random().toString()).slice(0, 22),
        iat: Math.floor(Date.now() / 1000),
        nonce,
      },
      signer,
      'ES256',
    );
  const challenges = async (n: number, purpose: 'verify' | 'run') => {
    const out = [];
    for (let i = 0; i < n; i++) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/agent-proof/challenge',
        payload: { proof_id: agent.proofId, purpose },
      });
      if (res.statusCode !== 200) throw new Error(`challenge failed: ${res.body}`);
      out.push(res.json() as { challenge_id: string; nonce: string });
    }
    return out;
  };
  // The request pipeline alone (routing, hooks, logging, serialising), for scale.
  const floor = await measure(
    'pipeline floor: GET /healthz',
    async (n) => Array.from({ length: n }, () => null),
    async () => {
      const res = await app.inject({ method: 'GET', url: '/healthz' });
      if (res.statusCode !== 200) throw new Error(`healthz failed: ${res.body}`);
    },
  );
  const verify = await measure(
    'verify',
    async (n) => (await challenges(n, 'verify')).map((c) => ({ c, proof: dpop('/api/agent-proof/verify', c.nonce) })),
    async ({ c, proof }) => {
      const res = await app.inject({
        method: 'POST',
        url: '/api/agent-proof/verify',
        headers: { dpop: proof },
        payload: { proof_id: agent.proofId, challenge_id: c.challenge_id },
      });
      if (res.statusCode !== 200) throw new Error(`verify failed: ${res.body}`);
    },
  );
  const run = await measure(
    'run',
    async (n) =>
      (await challenges(n, 'run')).map((c) => {
        const body = {
          format: 'svc-agent-run-proof-v1',
          agent_id: agent.agentId,
          challenge_id: c.challenge_id,
          task_commitment: h('t'),
          input_commitment: h('i'),
          output_commitment: h('o'),
          started_at: '2026-11-22T12:00:00Z',
          finished_at: '2026-11-22T12:00:01Z',
        } as const;
        const sig = signRunProof(body, signer, 'ES256');
        return { c, runProof: { ...body, sig }, proof: dpop('/api/agent-proof/run', c.nonce) };
      }),
    async ({ c, runProof, proof }) => {
      const res = await app.inject({
        method: 'POST',
        url: '/api/agent-proof/run',
        headers: { dpop: proof },
        payload: { proof_id: agent.proofId, challenge_id: c.challenge_id, run_proof: runProof },
      });
      if (res.statusCode !== 200) throw new Error(`run failed: ${res.body}`);
    },
  );
  const met = (rate: number) => (rate >= TARGET ? 'met' : 'NOT met');
  process.stdout.write('\n| call | per CPU-second (one core) | wall (/s) |\n|---|---|---|\n');
  for (const [name, rate] of [
    ['raw ES256 sign (bound)', bound],
    ['GET /healthz (pipeline floor)', floor],
    ['verify', verify],
    ['run', run],
  ] as const) {
    process.stdout.write(`| ${name} | ${Math.round(rate.cpu)} | ${Math.round(rate.wall)} |\n`);
  }
  process.stdout.write(`\ntarget ${TARGET}/s on one core: verify ${met(verify.cpu)}, run ${met(run.cpu)}\n`);
} finally {
  await runTeardowns();
}
