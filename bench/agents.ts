/**
 * bench:agents — agent-proof verify and run calls per second on one core.
 *
 * Method: the control plane runs in-process and is driven through fastify's `inject`, one
 * request at a time (no sockets), like bench:token. Challenges and the agent's DPoP proofs
 * (and run proofs) are made outside the timed section, in batches; the timed section is the
 * server's work per call: take the challenge, check the DPoP proof (one signature check, and
 * for a run the run proof's), sign the token (one ES256 signature). Every answer is checked
 * for status 200, so a failing call cannot look fast.
 */
import { CompactSign } from 'jose';
import { createHash } from 'node:crypto';
import { runProofSigningInput, type RunProof } from '../lib/agents/run-proof.js';
import { agentKey, enrollAgent } from '../test/helpers/agents.js';
import { buildSignedIn } from '../test/helpers/signed-in.js';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5);
const BATCH = 200;
const teardowns: Array<() => unknown> = [];
const tap = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
const h = (s: string) => createHash('sha256').update(s).digest('hex');

async function measure<T>(name: string, prepare: (n: number) => Promise<T[]>, op: (input: T) => Promise<void>): Promise<number> {
  for (const input of await prepare(20)) await op(input);
  let count = 0;
  let elapsedNs = 0n;
  while (elapsedNs < BigInt(SECONDS * 1e9)) {
    const inputs = await prepare(BATCH);
    const start = process.hrtime.bigint();
    for (const input of inputs) await op(input);
    elapsedNs += process.hrtime.bigint() - start;
    count += inputs.length;
  }
  const rate = count / (Number(elapsedNs) / 1e9);
  process.stdout.write(`${name}: ${rate.toFixed(0)} calls/s (${count} calls)\n`);
  return rate;
}

async function main(): Promise<void> {
  const { app, signIn } = await buildSignedIn(tap);
  const { browser } = await signIn({ username: 'bench' });
  const agent = await enrollAgent(app, browser, { key: await agentKey('ES256') });
  const challenges = async (n: number, purpose: 'verify' | 'run') => {
    const out = [];
    for (let i = 0; i < n; i++) {
      const c = (await app.inject({ method: 'POST', url: '/api/agent-proof/challenge', payload: { proof_id: agent.proofId, purpose } })).json();
      out.push(c as { challenge_id: string; nonce: string });
    }
    return out;
  };
  const verify = await measure('verify', async (n) => Promise.all((await challenges(n, 'verify')).map(async (c) => ({ c, dpop: await agent.key.proof('/api/agent-proof/verify', { nonce: c.nonce }) }))), async ({ c, dpop }) => {
    const res = await app.inject({ method: 'POST', url: '/api/agent-proof/verify', headers: { dpop }, payload: { proof_id: agent.proofId, challenge_id: c.challenge_id } });
    if (res.statusCode !== 200) throw new Error(`verify failed: ${res.body}`);
  });
  const run = await measure('run', async (n) => Promise.all((await challenges(n, 'run')).map(async (c) => {
    const body = {
      format: 'svc-agent-run-proof-v1', agent_id: agent.agentId, challenge_id: c.challenge_id, task_commitment: h('t'), input_commitment: h('i'), output_commitment: h('o'),
      started_at: '2026-11-22T12:00:00Z', finished_at: '2026-11-22T12:00:01Z',
    };
    const sig = await new CompactSign(new TextEncoder().encode(runProofSigningInput(body as RunProof))).setProtectedHeader({ alg: 'ES256' }).sign(agent.key.privateKey);
    return { c, runProof: { ...body, sig }, dpop: await agent.key.proof('/api/agent-proof/run', { nonce: c.nonce }) };
  })), async ({ c, runProof, dpop }) => {
    const res = await app.inject({ method: 'POST', url: '/api/agent-proof/run', headers: { dpop }, payload: { proof_id: agent.proofId, challenge_id: c.challenge_id, run_proof: runProof } });
    if (res.statusCode !== 200) throw new Error(`run failed: ${res.body}`);
  });
  process.stdout.write(`target 1000/s: verify ${verify >= 1000 ? 'met' : 'not met'}, run ${run >= 1000 ? 'met' : 'not met'}\n`);
  for (const fn of teardowns.reverse()) await fn();
}

await main();
