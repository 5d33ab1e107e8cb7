import t from 'tap';
import { agentKey, enrollAgent, postWithKeyProof, recordEvents } from '../../helpers/agents.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['agents'] as const;

const LIFECYCLE = '/auth/agents/proof/lifecycle';
const ROTATE = '/auth/agents/proof/key-rotate';

t.test(
  'suspend, resume, mark compromised, recover by rotation, resume with owner and new key, revoke: each receipted',
  async (t) => {
    const { app, signIn, services } = await buildSignedIn(t, { areas });
    const { browser } = await signIn({ username: 'alice' });
    const agent = await enrollAgent(app, browser);
    const act = (action: string, headers: Record<string, string> = {}) =>
      browser.post(LIFECYCLE, { agent_id: agent.agentId, action }, headers);
    const suspended = await act('suspend');
    t.same([suspended.statusCode, suspended.json().state], [200, 'suspended']);
    t.match(suspended.json().receipt, /^[0-9a-f]{64}$/);
    const twice = await act('suspend');
    t.equal(twice.statusCode, 409);
    t.equal(twice.json().reason, 'agent_state');
    t.match(twice.json().message, /suspended/, 'the current state is named');
    t.equal((await act('resume')).json().state, 'active');
    t.equal((await act('mark_compromised')).json().state, 'compromised');
    const resume = await act('resume');
    t.equal(resume.json().reason, 'agent_state', 'a compromised agent is never simply resumed');
    const fresh = await agentKey('EdDSA');
    const weak = await browser.post(ROTATE, { agent_id: agent.agentId, publicJwk: fresh.jwk });
    t.equal(weak.json().reason, 'insufficient_assurance', 'compromise recovery needs sensitive');
    const { browser: strong } = await signIn({ username: 'alice', assurance: 'sensitive' });
    const rotated = await strong.post(ROTATE, { agent_id: agent.agentId, publicJwk: fresh.jwk });
    t.same([rotated.statusCode, rotated.json().state, rotated.json().jkt], [200, 'suspended', fresh.jkt]);
    const send = (b: typeof browser) => (headers: Record<string, string>) =>
      b.post(LIFECYCLE, { agent_id: agent.agentId, action: 'resume' }, headers);
    t.equal(
      (await postWithKeyProof(send(browser), fresh, LIFECYCLE)).json().reason,
      'insufficient_assurance',
      'the owner must step up',
    );
    t.equal(
      (await postWithKeyProof(send(strong), agent.key, LIFECYCLE)).json().reason,
      'agent_key_mismatch',
      'the old key cannot resume',
    );
    const back = await postWithKeyProof(send(strong), fresh, LIFECYCLE);
    t.same([back.statusCode, back.json().state], [200, 'active']);
    t.equal((await act('revoke')).json().state, 'revoked');
    for (const action of ['resume', 'suspend', 'revoke', 'mark_compromised']) {
      const res = await act(action);
      t.equal(res.json().reason, 'agent_state', `${action} after revoke`);
      t.match(res.json().message, /revoked/);
    }
    t.equal((await services.storage.agents.get(agent.agentId))?.state, 'revoked');
  },
);

t.test('normal rotation needs a DPoP proof by the current key; another key changes nothing', async (t) => {
  const { app, signIn, services } = await buildSignedIn(t, { areas });
  const { browser } = await signIn({ username: 'alice' });
  const agent = await enrollAgent(app, browser);
  const events = recordEvents(services);
  const fresh = await agentKey();
  const send = (headers: Record<string, string>) =>
    browser.post(ROTATE, { agent_id: agent.agentId, publicJwk: fresh.jwk }, headers);
  const byNew = await postWithKeyProof(send, fresh, ROTATE);
  t.equal(byNew.json().reason, 'agent_key_mismatch');
  t.equal((await send({})).json().reason, 'invalid_dpop_proof');
  t.same(events, [], 'nothing recorded');
  const ok = await postWithKeyProof(send, agent.key, ROTATE);
  t.same([ok.statusCode, ok.json().state, ok.json().jkt], [200, 'active', fresh.jkt]);
  t.equal((await services.storage.agents.get(agent.agentId))?.jkt, fresh.jkt);
});

t.test('unknown and foreign agents are the same not_found', async (t) => {
  const { app, signIn } = await buildSignedIn(t, { areas });
  const { browser: alice } = await signIn({ username: 'alice' });
  const { browser: mallory } = await signIn({ username: 'mallory', assurance: 'sensitive' });
  const agent = await enrollAgent(app, alice);
  const foreign = await mallory.post(LIFECYCLE, { agent_id: agent.agentId, action: 'revoke' });
  const unknown = await mallory.post(LIFECYCLE, { agent_id: 'agt_nothing', action: 'revoke' });
  t.same([foreign.statusCode, foreign.json().reason], [404, 'not_found']);
  t.same(foreign.json(), unknown.json());
  t.equal(
    (await mallory.post('/auth/agents/proof/visibility', { agent_id: agent.agentId, visibility: 'private' })).json()
      .reason,
    'not_found',
  );
});

t.test(
  'a transfer goes to one named owner with a fresh key and resumes only with their step-up and the new key',
  async (t) => {
    const { app, signIn, services } = await buildSignedIn(t, { areas });
    const { browser: alice } = await signIn({ username: 'alice' });
    const { browser: bob, identityId: bobId } = await signIn({ username: 'bob' });
    const { browser: carol } = await signIn({ username: 'carol' });
    const agent = await enrollAgent(app, alice);
    const begun = await alice.post('/auth/agents/proof/transfer/begin', { agent_id: agent.agentId, to: 'bob' });
    t.equal(begun.statusCode, 200);
    const code = begun.json().transfer_code as string;
    t.match(code, /^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    t.equal((await services.storage.agents.get(agent.agentId))?.state, 'suspended', 'transfer begin suspends');
    const fresh = await agentKey();
    const events = recordEvents(services);
    const byCarol = await carol.post('/auth/agents/proof/transfer/accept', {
      agent_id: agent.agentId,
      transfer_code: code,
      publicJwk: fresh.jwk,
    });
    t.same([byCarol.statusCode, byCarol.json().reason], [403, 'transfer_unknown'], 'a code used by someone else');
    const wrongCode = await bob.post('/auth/agents/proof/transfer/accept', {
      agent_id: agent.agentId,
      transfer_code: code === 'AAAA-AAAA' ? 'BBBB-BBBB' : 'AAAA-AAAA',
      publicJwk: fresh.jwk,
    });
    t.equal(wrongCode.json().reason, 'transfer_unknown');
    const sameKey = await bob.post('/auth/agents/proof/transfer/accept', {
      agent_id: agent.agentId,
      transfer_code: code,
      publicJwk: agent.key.jwk,
    });
    t.equal(sameKey.json().reason, 'invalid_request', 'the key must be fresh');
    t.same(events, [], 'nothing recorded by the refusals');
    const accepted = await bob.post('/auth/agents/proof/transfer/accept', {
      agent_id: agent.agentId,
      transfer_code: code,
      publicJwk: fresh.jwk,
    });
    t.same([accepted.statusCode, accepted.json().state], [200, 'suspended']);
    const stored = await services.storage.agents.get(agent.agentId);
    t.equal(stored?.ownerId, bobId);
    t.equal(stored?.jkt, fresh.jkt);
    t.equal(
      (await alice.post(LIFECYCLE, { agent_id: agent.agentId, action: 'resume' })).json().reason,
      'not_found',
      'the old owner lost it',
    );
    const again = await bob.post('/auth/agents/proof/transfer/accept', {
      agent_id: agent.agentId,
      transfer_code: code,
      publicJwk: (await agentKey()).jwk,
    });
    t.equal(again.json().reason, 'transfer_unknown', 'one use');
    const resumeBy = (b: typeof bob) => (headers: Record<string, string>) =>
      b.post(LIFECYCLE, { agent_id: agent.agentId, action: 'resume' }, headers);
    t.equal((await postWithKeyProof(resumeBy(bob), fresh, LIFECYCLE)).json().reason, 'insufficient_assurance');
    const { browser: bobStrong } = await signIn({ username: 'bob', assurance: 'sensitive' });
    t.equal((await resumeBy(bobStrong)({})).json().reason, 'invalid_dpop_proof', 'the key must co-sign');
    const resumed = await postWithKeyProof(resumeBy(bobStrong), fresh, LIFECYCLE);
    t.same([resumed.statusCode, resumed.json().state], [200, 'active']);
  },
);

t.test('setting visibility needs sensitive', async (t) => {
  const { app, signIn, services } = await buildSignedIn(t, { areas });
  const { browser } = await signIn({ username: 'alice' });
  const agent = await enrollAgent(app, browser);
  t.equal(
    (await browser.post('/auth/agents/proof/visibility', { agent_id: agent.agentId, visibility: 'private' })).json()
      .reason,
    'insufficient_assurance',
  );
  const { browser: strong } = await signIn({ username: 'alice', assurance: 'sensitive' });
  const res = await strong.post('/auth/agents/proof/visibility', { agent_id: agent.agentId, visibility: 'private' });
  t.same([res.statusCode, res.json().visibility], [200, 'private']);
  t.equal((await services.storage.agents.get(agent.agentId))?.visibility, 'private');
});
