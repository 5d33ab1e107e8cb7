import t, { type Test as Tap } from 'tap';
import { agentKey, postWithKeyProof, recordEvents } from '../../helpers/agents.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['agents'] as const;

const BEGIN = '/auth/agents/proof/enroll/begin';
const COMPLETE = '/auth/agents/proof/enroll/complete';

async function setup(t: Tap) {
  let now = Date.now();
  const built = await buildSignedIn(t, { areas, now: () => now });
  return { ...built, advance: (ms: number) => (now += ms) };
}

t.test(
  'an agent enrolls: begin, approval by the owner code, a nonce-bound DPoP proof, and status polling',
  async (t) => {
    const { app, signIn, services } = await setup(t);
    const { browser, identityId } = await signIn({ username: 'alice' });
    for (const alg of ['ES256', 'EdDSA'] as const) {
      const key = await agentKey(alg);
      const begun = await app.inject({
        method: 'POST',
        url: BEGIN,
        payload: { name: 'bot', subjectKind: 'automation', publicJwk: key.jwk },
      });
      t.equal(begun.statusCode, 200);
      const { enrollment_id, owner_code, expires_at } = begun.json();
      t.match(enrollment_id, /^aen_/);
      t.match(owner_code, /^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
      t.equal(Date.parse(expires_at) - services.now(), 15 * 60_000);
      const status = async () =>
        (
          await app.inject({ method: 'POST', url: '/auth/agents/proof/enroll/status', payload: { enrollment_id } })
        ).json();
      t.same(
        await status(),
        { ok: true, status: 'pending_approval', expires_at },
        'status says nothing about the owner',
      );
      // Completing before approval: the key is proven, but there is nothing to complete yet.
      const early = await postWithKeyProof(
        (headers) => app.inject({ method: 'POST', url: COMPLETE, headers, payload: { enrollment_id } }),
        key,
        COMPLETE,
        services.now,
      );
      t.equal(early.json().reason, 'enrollment_not_approved');
      const approved = await browser.post('/auth/agents/proof/enroll/approve', {
        enrollment_id,
        owner_code: owner_code.toLowerCase().replace('-', ' '),
      });
      t.equal(approved.statusCode, 200);
      t.match(approved.json().receipt, /^[0-9a-f]{64}$/);
      t.same(await status(), { ok: true, status: 'approved', expires_at });
      const first = await app.inject({
        method: 'POST',
        url: COMPLETE,
        headers: { dpop: await key.proof(COMPLETE, { iat: Math.floor(services.now() / 1000) }) },
        payload: { enrollment_id },
      });
      t.equal(first.statusCode, 401, 'the first call has no nonce');
      t.equal(first.json().reason, 'use_dpop_nonce');
      const nonce = first.headers['dpop-nonce'] as string;
      t.ok(nonce);
      const done = await app.inject({
        method: 'POST',
        url: COMPLETE,
        headers: { dpop: await key.proof(COMPLETE, { nonce, iat: Math.floor(services.now() / 1000) }) },
        payload: { enrollment_id },
      });
      t.equal(done.statusCode, 200, done.body);
      const { agent_id, proof_id, proof_url } = done.json();
      t.match(agent_id, /^agt_/);
      t.match(proof_id, /^[A-Za-z0-9_-]{22}$/, '128 bits, no prefix');
      t.equal(proof_url, `http://localhost:4400/agent/${proof_id}`);
      t.same(await status(), { ok: true, status: 'completed', expires_at });
      const stored = await services.storage.agents.get(agent_id);
      t.equal(stored?.ownerId, identityId);
      t.equal(stored?.state, 'active');
      t.equal(stored?.jkt, key.jkt);
      const again = await app.inject({
        method: 'POST',
        url: COMPLETE,
        headers: { dpop: await key.proof(COMPLETE, { nonce }) },
        payload: { enrollment_id },
      });
      t.equal(again.json().reason, 'enrollment_unknown', 'one use');
    }
  },
);

t.test('enrollment begin refuses private key material and unsupported keys, storing nothing', async (t) => {
  const { app, services } = await setup(t);
  const events = recordEvents(services);
  const { generateKeyPair, exportJWK } = await import('jose');
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const priv = await exportJWK(privateKey);
  const p384 = await exportJWK((await generateKeyPair('ES384')).publicKey);
  for (const [jwk, reason] of [
    [priv, 'private_key_material'],
    [{ kty: 'oct', k: 'c2VjcmV0' }, 'private_key_material'],
    [p384, 'unsupported_key'],
  ] as const) {
    const res = await app.inject({
      method: 'POST',
      url: BEGIN,
      payload: { name: 'bot', subjectKind: 'ai_agent', publicJwk: jwk },
    });
    t.equal(res.statusCode, 400);
    t.equal(res.json().reason, reason);
  }
  const bad = await app.inject({
    method: 'POST',
    url: BEGIN,
    payload: { name: 'bot', subjectKind: 'wizard', publicJwk: (await agentKey()).jwk },
  });
  t.equal(bad.json().reason, 'invalid_request');
  t.same(events, [], 'nothing recorded');
});

t.test(
  'approval refuses a wrong code, an unknown or expired enrollment alike, and dies after five attempts',
  async (t) => {
    const { app, signIn, advance } = await setup(t);
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
    const a = await begin();
    const wrong = a.owner_code === 'AAAA-AAAA' ? 'BBBB-BBBB' : 'AAAA-AAAA';
    for (let i = 0; i < 5; i++) {
      const res = await browser.post('/auth/agents/proof/enroll/approve', {
        enrollment_id: a.enrollment_id,
        owner_code: wrong,
      });
      t.equal(res.statusCode, 404);
      t.equal(res.json().reason, 'enrollment_unknown');
    }
    const sixth = await browser.post('/auth/agents/proof/enroll/approve', {
      enrollment_id: a.enrollment_id,
      owner_code: a.owner_code,
    });
    t.equal(sixth.json().reason, 'enrollment_unknown', 'the right code no longer helps');
    const unknown = await browser.post('/auth/agents/proof/enroll/approve', {
      enrollment_id: 'aen_nothing',
      owner_code: a.owner_code,
    });
    t.equal(unknown.json().reason, 'enrollment_unknown');
    const b = await begin();
    advance(15 * 60_000);
    const late = await browser.post('/auth/agents/proof/enroll/approve', {
      enrollment_id: b.enrollment_id,
      owner_code: b.owner_code,
    });
    t.equal(late.json().reason, 'enrollment_unknown');
    const status = await app.inject({
      method: 'POST',
      url: '/auth/agents/proof/enroll/status',
      payload: { enrollment_id: b.enrollment_id },
    });
    t.equal(status.json().status, 'expired');
  },
);

t.test('approval needs a session at passkey; a recovery sign-in is not enough', async (t) => {
  const { app, signIn } = await setup(t);
  const { browser } = await signIn({ username: 'rita', assurance: 'recovery' });
  const key = await agentKey();
  const a = (
    await app.inject({
      method: 'POST',
      url: BEGIN,
      payload: { name: 'bot', subjectKind: 'ai_agent', publicJwk: key.jwk },
    })
  ).json();
  const res = await browser.post('/auth/agents/proof/enroll/approve', {
    enrollment_id: a.enrollment_id,
    owner_code: a.owner_code,
  });
  t.equal(res.json().reason, 'insufficient_assurance');
  const anonymous = await app.inject({
    method: 'POST',
    url: '/auth/agents/proof/enroll/approve',
    payload: { enrollment_id: a.enrollment_id, owner_code: a.owner_code },
  });
  t.equal(anonymous.json().reason, 'unauthorized');
});

t.test('completion refuses a DPoP proof by another key, and an expired enrollment', async (t) => {
  const { app, signIn, services, advance } = await setup(t);
  const { browser } = await signIn({ username: 'alice' });
  const key = await agentKey();
  const other = await agentKey();
  const a = (
    await app.inject({
      method: 'POST',
      url: BEGIN,
      payload: { name: 'bot', subjectKind: 'ai_agent', publicJwk: key.jwk },
    })
  ).json();
  await browser.post('/auth/agents/proof/enroll/approve', { enrollment_id: a.enrollment_id, owner_code: a.owner_code });
  const send = (headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: COMPLETE, headers, payload: { enrollment_id: a.enrollment_id } });
  const byOther = await postWithKeyProof(send, other, COMPLETE, services.now);
  t.equal(byOther.statusCode, 401);
  t.equal(byOther.json().reason, 'agent_key_mismatch');
  const noProof = await send({});
  t.equal(noProof.statusCode, 401);
  t.equal(noProof.json().reason, 'invalid_dpop_proof');
  const wrongPath = await postWithKeyProof(
    (headers) => send({ dpop: headers.dpop! }),
    { ...key, proof: (p, o) => key.proof('/elsewhere', o) },
    COMPLETE,
    services.now,
  );
  t.equal(wrongPath.json().reason, 'invalid_dpop_proof');
  t.same(
    await services.storage.agents.listByOwner((await services.storage.identities.findByUsername('alice'))!.identityId),
    [],
    'no agent',
  );
  advance(15 * 60_000);
  const late = await postWithKeyProof(send, key, COMPLETE, services.now);
  t.equal(late.json().reason, 'enrollment_unknown');
});
