import { CompactSign, decodeJwt } from 'jose';
import { createHash } from 'node:crypto';
import t from 'tap';
import { runProofSigningInput, type RunProof } from '#lib/agents/run-proof.js';
import { agentKey, enrollAgent, postWithKeyProof } from '../../helpers/agents.js';
import { manualClock } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['agents'] as const;

const BEGIN = '/auth/agents/proof/enroll/begin';
const COMPLETE = '/auth/agents/proof/enroll/complete';
const h = (s: string) => createHash('sha256').update(s).digest('hex');

t.test('an enrollment expires 15 minutes after begin, unapproved or approved and uncompleted', async (t) => {
  const clock = manualClock(Date.now());
  const { app, signIn } = await buildSignedIn(t, { areas, now: clock.now });
  const { browser } = await signIn({ username: 'alice' });
  const key = await agentKey();
  const begin = async () =>
    (
      await app.inject({
        method: 'POST',
        url: BEGIN,
        payload: { name: 'bot', subjectKind: 'ai_agent', publicJwk: key.jwk },
      })
    ).json();
  const status = async (id: string) =>
    (
      await app.inject({ method: 'POST', url: '/auth/agents/proof/enroll/status', payload: { enrollment_id: id } })
    ).json().status;

  const unapproved = await begin();
  const approvedLate = await begin();
  t.equal(Date.parse(unapproved.expires_at) - clock.now(), 15 * 60_000);
  clock.advance(15 * 60_000 - 1);
  t.equal(await status(unapproved.enrollment_id), 'pending_approval', 'alive until the last millisecond');
  const approved = await browser.post('/auth/agents/proof/enroll/approve', {
    enrollment_id: approvedLate.enrollment_id,
    owner_code: approvedLate.owner_code,
  });
  t.equal(approved.statusCode, 200, approved.body);
  t.equal(await status(approvedLate.enrollment_id), 'approved');
  clock.advance(1);
  t.equal(await status(unapproved.enrollment_id), 'expired');
  t.equal(await status(approvedLate.enrollment_id), 'expired', 'approved but not completed in time');
  const late = await browser.post('/auth/agents/proof/enroll/approve', {
    enrollment_id: unapproved.enrollment_id,
    owner_code: unapproved.owner_code,
  });
  t.equal(late.json().reason, 'enrollment_unknown');
  const send = (headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: COMPLETE, headers, payload: { enrollment_id: approvedLate.enrollment_id } });
  const proofNow = {
    ...key,
    proof: (path: string, o: Parameters<typeof key.proof>[1] = {}) =>
      key.proof(path, { ...o, iat: Math.floor(clock.now() / 1000) }),
  };
  const completed = await postWithKeyProof(send, proofNow, COMPLETE);
  t.equal(completed.json().reason, 'enrollment_unknown');
  t.same(await app.kp.storage.agents.listByOwner('usr_alice'), [], 'no agent came of either');
});

t.test('a challenge lives 60 s; proof and run tokens live at most 300 s', async (t) => {
  const clock = manualClock(Date.now());
  const { app, signIn } = await buildSignedIn(t, { areas, now: clock.now });
  const { browser } = await signIn({ username: 'alice' });
  const agent = await enrollAgent(app, browser);
  const challenge = async (purpose: 'verify' | 'run') =>
    (
      await app.inject({
        method: 'POST',
        url: '/api/agent-proof/challenge',
        payload: { proof_id: agent.proofId, purpose },
      })
    ).json();
  const prove = async (path: string, payload: Record<string, unknown>, nonce: string) =>
    app.inject({
      method: 'POST',
      url: path,
      payload: { proof_id: agent.proofId, ...payload },
      headers: { dpop: await agent.key.proof(path, { nonce, iat: Math.floor(clock.now() / 1000) }) },
    });

  const stale = await challenge('verify');
  t.equal(Date.parse(stale.expires_at) - clock.now(), 60_000);
  const fresh = await challenge('verify');
  clock.advance(60_000 - 1);
  const ok = await prove('/api/agent-proof/verify', { challenge_id: fresh.challenge_id }, fresh.nonce);
  t.equal(ok.statusCode, 200, ok.body);
  t.ok(ok.json().expires_in <= 300);
  const claims = decodeJwt(ok.json().token);
  t.ok(claims.exp! - claims.iat! <= 300, 'exp within 300 s of iat');
  t.equal(claims.iat, Math.floor(clock.now() / 1000), "issued on the control plane's clock");
  clock.advance(1);
  const expired = await prove('/api/agent-proof/verify', { challenge_id: stale.challenge_id }, stale.nonce);
  t.equal(expired.statusCode, 400, expired.body);
  t.equal(expired.json().reason, 'challenge_unknown', 'expired after 60 s');

  const c = await challenge('run');
  const body = {
    format: 'svc-agent-run-proof-v1',
    agent_id: agent.agentId,
    challenge_id: c.challenge_id,
    task_commitment: h('t'),
    input_commitment: h('i'),
    output_commitment: h('o'),
    started_at: new Date(clock.now() - 1000).toISOString(),
    finished_at: new Date(clock.now()).toISOString(),
  };
  const sig = await new CompactSign(new TextEncoder().encode(runProofSigningInput(body as RunProof)))
    .setProtectedHeader({ alg: 'ES256' })
    .sign(agent.key.privateKey);
  const run = await prove(
    '/api/agent-proof/run',
    { challenge_id: c.challenge_id, run_proof: { ...body, sig } },
    c.nonce,
  );
  t.equal(run.statusCode, 200, run.body);
  t.ok(run.json().expires_in <= 300);
  const runClaims = decodeJwt(run.json().token);
  t.ok(runClaims.exp! - runClaims.iat! <= 300);
});
