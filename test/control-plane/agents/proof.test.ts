import t, { type Test as Tap } from 'tap';
import { CompactSign, createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { createHash } from 'node:crypto';
import { runProofSigningInput, type RunProof } from '#lib/agents/run-proof.js';
import { agentKey, enrollAgent, recordEvents, type AgentKey } from '../../helpers/agents.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

const h = (s: string) => createHash('sha256').update(s).digest('hex');

async function runProof(
  key: AgentKey,
  agentId: string,
  challengeId: string,
  extra: Record<string, unknown> = {},
): Promise<RunProof> {
  const body = {
    format: 'svc-agent-run-proof-v1',
    agent_id: agentId,
    challenge_id: challengeId,
    task_commitment: h('task'),
    input_commitment: h('input'),
    output_commitment: h('output'),
    started_at: '2026-11-22T12:00:00Z',
    finished_at: '2026-11-22T12:00:03Z',
  };
  const sig = await new CompactSign(new TextEncoder().encode(runProofSigningInput(body as RunProof)))
    .setProtectedHeader({ alg: key.alg })
    .sign(key.privateKey);
  return { ...body, sig, ...extra } as RunProof;
}

async function setup(t: Tap) {
  const built = await buildSignedIn(t);
  const { browser } = await built.signIn({ username: 'alice' });
  const agent = await enrollAgent(built.app, browser, { key: await agentKey('EdDSA') });
  const jwks = createLocalJWKSet((await built.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json());
  const challenge = async (purpose = 'verify', proofId = agent.proofId) =>
    built.app.inject({ method: 'POST', url: '/api/agent-proof/challenge', payload: { proof_id: proofId, purpose } });
  const prove = async (
    path: '/api/agent-proof/verify' | '/api/agent-proof/run',
    payload: Record<string, unknown>,
    key: AgentKey,
    nonce?: string,
  ) =>
    built.app.inject({
      method: 'POST',
      url: path,
      headers: { dpop: await key.proof(path, nonce ? { nonce } : {}) },
      payload: { proof_id: agent.proofId, ...payload },
    });
  return { ...built, browser, agent, jwks, challenge, prove };
}

t.test('the Proof Link shows the proof vector with a vc+jwt by the issuer key and an A2A projection', async (t) => {
  const { app, agent, jwks } = await setup(t);
  const res = await app.inject({ method: 'GET', url: `/agent/${agent.proofId}.json` });
  t.equal(res.statusCode, 200);
  const vector = res.json();
  t.same(Object.keys(vector).sort(), [
    'a2a',
    'claims',
    'evidence',
    'jkt',
    'name',
    'proof_id',
    'publicJwk',
    'state',
    'subjectKind',
    'vc',
  ]);
  t.equal(vector.claims.key_control.status, 'verified');
  t.equal(vector.claims.owner_accountability.status, 'verified');
  t.equal(vector.claims.channel_control.status, 'declared');
  t.equal(vector.jkt, agent.key.jkt);
  t.equal(decodeProtectedHeader(vector.vc).typ, 'vc+jwt');
  const { payload } = await jwtVerify(vector.vc, jwks, { issuer: 'http://localhost:4400', typ: 'vc+jwt' });
  t.same(payload['@context'], ['https://www.w3.org/ns/credentials/v2']);
  t.equal(payload.issuer, 'http://localhost:4400');
  t.notOk('vc' in payload, 'VC-JOSE-COSE: no vc claim');
  t.equal(vector.a2a.name, 'Build bot');
  const page = await app.inject({ method: 'GET', url: `/agent/${agent.proofId}`, headers: { accept: 'text/html' } });
  t.equal(page.statusCode, 200);
  t.match(page.body, /Build bot/);
  t.match(page.headers['content-security-policy'], /script-src/);
});

t.test('private and unknown Proof Links are the same 404', async (t) => {
  const { app, signIn, agent } = await setup(t);
  const { browser: strong } = await signIn({ username: 'alice', assurance: 'sensitive' });
  await strong.post('/auth/agents/proof/visibility', { agent_id: agent.agentId, visibility: 'private' });
  for (const suffix of ['', '.json']) {
    const priv = await app.inject({ method: 'GET', url: `/agent/${agent.proofId}${suffix}` });
    const unknown = await app.inject({ method: 'GET', url: `/agent/${'A'.repeat(22)}${suffix}` });
    t.same([priv.statusCode, unknown.statusCode], [404, 404]);
    t.same(priv.json(), unknown.json());
  }
  const challenge = await app.inject({
    method: 'POST',
    url: '/api/agent-proof/challenge',
    payload: { proof_id: agent.proofId },
  });
  t.equal(challenge.statusCode, 404);
  await strong.post('/auth/agents/proof/visibility', { agent_id: agent.agentId, visibility: 'unlisted' });
  t.equal(
    (await app.inject({ method: 'GET', url: `/agent/${agent.proofId}.json` })).statusCode,
    200,
    'unlisted is reachable by its link',
  );
});

t.test(
  'verify: a one-use challenge answered by a DPoP proof of the current key gives a short agent-proof+jwt',
  async (t) => {
    const { challenge, prove, agent, jwks } = await setup(t);
    const c = (await challenge()).json();
    t.match(c.challenge_id, /^apc_/);
    const res = await prove(
      '/api/agent-proof/verify',
      { challenge_id: c.challenge_id, audience: 'https://verifier.example' },
      agent.key,
      c.nonce,
    );
    t.equal(res.statusCode, 200, res.body);
    t.ok(res.json().expires_in <= 300);
    const { payload, protectedHeader } = await jwtVerify(res.json().token, jwks, {
      typ: 'agent-proof+jwt',
      audience: 'https://verifier.example',
    });
    t.equal(protectedHeader.alg, 'ES256');
    t.equal(payload.sub, agent.agentId);
    t.same(payload.cnf, { jkt: agent.key.jkt });
    const reused = await prove('/api/agent-proof/verify', { challenge_id: c.challenge_id }, agent.key, c.nonce);
    t.equal(reused.json().reason, 'challenge_unknown', 'a reused challenge');
  },
);

t.test(
  'verify refuses another key, a missing or wrong nonce, a run challenge or an unknown challenge; nothing is issued',
  async (t) => {
    const { challenge, prove, agent, services } = await setup(t);
    const events = recordEvents(services);
    const other = await agentKey();
    const c1 = (await challenge()).json();
    t.equal(
      (await prove('/api/agent-proof/verify', { challenge_id: c1.challenge_id }, other, c1.nonce)).json().reason,
      'agent_key_mismatch',
    );
    const c2 = (await challenge()).json();
    t.equal(
      (await prove('/api/agent-proof/verify', { challenge_id: c2.challenge_id }, agent.key)).json().reason,
      'use_dpop_nonce',
    );
    const c3 = (await challenge()).json();
    t.equal(
      (await prove('/api/agent-proof/verify', { challenge_id: c3.challenge_id }, agent.key, 'not-the-nonce')).json()
        .reason,
      'use_dpop_nonce',
    );
    const run = (await challenge('run')).json();
    t.equal(
      (await prove('/api/agent-proof/verify', { challenge_id: run.challenge_id }, agent.key, run.nonce)).json().reason,
      'challenge_unknown',
      'a run challenge is not a verify challenge',
    );
    t.equal(
      (await prove('/api/agent-proof/verify', { challenge_id: 'apc_nothing' }, agent.key, 'x')).json().reason,
      'challenge_unknown',
    );
    t.same(events, []);
  },
);

t.test(
  'run: a signed commitment-only run proof gives an agent-run+jwt with its hash; raw content or a bad signature is refused',
  async (t) => {
    const { challenge, prove, agent, jwks } = await setup(t);
    const c = (await challenge('run')).json();
    const proof = await runProof(agent.key, agent.agentId, c.challenge_id);
    const res = await prove(
      '/api/agent-proof/run',
      { challenge_id: c.challenge_id, run_proof: proof },
      agent.key,
      c.nonce,
    );
    t.equal(res.statusCode, 200, res.body);
    const { payload } = await jwtVerify(res.json().token, jwks, { typ: 'agent-run+jwt' });
    const { canonicalJson } = await import('#lib/ledger/canonical-json.js');
    t.equal(payload.run_proof_hash, h(canonicalJson(proof)));
    const c2 = (await challenge('run')).json();
    const raw = await prove(
      '/api/agent-proof/run',
      {
        challenge_id: c2.challenge_id,
        run_proof: { ...(await runProof(agent.key, agent.agentId, c2.challenge_id)), input: 'secret prompt' },
      },
      agent.key,
      c2.nonce,
    );
    t.same([raw.statusCode, raw.json().reason], [400, 'run_proof_invalid']);
    const c3 = (await challenge('run')).json();
    const other = await agentKey('EdDSA');
    const badSig = await prove(
      '/api/agent-proof/run',
      { challenge_id: c3.challenge_id, run_proof: await runProof(other, agent.agentId, c3.challenge_id) },
      agent.key,
      c3.nonce,
    );
    t.equal(badSig.json().reason, 'run_proof_invalid');
    const c4 = (await challenge('run')).json();
    const stale = await prove(
      '/api/agent-proof/run',
      { challenge_id: c4.challenge_id, run_proof: await runProof(agent.key, agent.agentId, c.challenge_id) },
      agent.key,
      c4.nonce,
    );
    t.equal(stale.json().reason, 'run_proof_invalid', 'a run proof for another challenge');
  },
);

t.test('a suspended agent gets no challenge', async (t) => {
  const { challenge, browser, agent } = await setup(t);
  await browser.post('/auth/agents/proof/lifecycle', { agent_id: agent.agentId, action: 'suspend' });
  const res = await challenge();
  t.same([res.statusCode, res.json().reason, res.json().state], [409, 'agent_state', 'suspended']);
});
