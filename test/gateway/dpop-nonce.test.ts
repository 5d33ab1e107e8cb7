import t from 'tap';
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { issueDpopNonce } from '#lib/dpop/nonce.js';
import { MemorySharedState } from '#lib/runtime/shared-state/index.js';
import { currentDpopNonce, deriveDpopNonceKeys } from '../../gateway/src/bearer.js';
import { dpopClient, signAccessToken, startTestGateway, startUpstream } from './helpers.js';

const POLICY = { mode: 'enforce' as const, routes: [{ path: '/', dpop: 'required' as const }] };
const PUBLIC_URL = 'http://gate.example.test';
const NONCE_FORM = /^\d+\.[\w-]{43}$/;
const cookieKey = (): string => randomBytes(32).toString('base64url');

t.test(
  'with dpopNonce on, a proof without the server nonce gets use_dpop_nonce and a nonce any replica accepts',
  async (t) => {
    const upstream = await startUpstream(t);
    const state = new MemorySharedState();
    t.teardown(() => state.close());
    const overrides = { publicUrl: PUBLIC_URL, dpopNonce: true, cookieKeys: [cookieKey()] };
    const a = await startTestGateway(t, { upstream: upstream.url, policy: POLICY, overrides, state });
    const b = await startTestGateway(t, { upstream: upstream.url, policy: POLICY, overrides, state });
    const client = await dpopClient();
    const token = await signAccessToken({ audience: PUBLIC_URL, jkt: client.jkt });
    const htu = `${PUBLIC_URL}/api/items`;
    const call = (base: string, dpop: string) =>
      request(`${base}/api/items`, { method: 'POST', headers: { authorization: `DPoP ${token}`, dpop }, body: '{}' });

    const first = await call(a.local, await client.proof('POST', htu, token));
    t.equal(first.statusCode, 401);
    t.match(await first.body.json(), { ok: false, reason: 'use_dpop_nonce', error: 'use_dpop_nonce' });
    t.match(String(first.headers['www-authenticate']), /^DPoP algs="ES256 EdDSA", error="use_dpop_nonce"/);
    const nonce = first.headers['dpop-nonce'];
    t.type(nonce, 'string', 'the refusal carries a DPoP-Nonce');
    t.equal(upstream.seen.length, 0);

    const retried = await call(b.local, await client.proof('POST', htu, token, nonce as string));
    t.equal(retried.statusCode, 200, 'the other replica accepts the nonce');
    await retried.body.dump();
    t.equal(upstream.last().headers['x-auth-subject'], 'user-1');

    const again = await call(a.local, await client.proof('POST', htu, token, nonce as string));
    t.equal(again.statusCode, 200, 'a nonce is good for many proofs until it rotates');
    await again.body.dump();

    for (const [name, bad] of [
      ['a made-up nonce', 'not-a-nonce'],
      [
        'a nonce of another gateway',
        currentDpopNonce(deriveDpopNonceKeys([{ key: randomBytes(32) }]), PUBLIC_URL, Date.now()),
      ],
      [
        'a nonce for another audience',
        currentDpopNonce(
          deriveDpopNonceKeys([{ key: Buffer.from(overrides.cookieKeys[0]!, 'base64url') }]),
          'http://other.example.test',
          Date.now(),
        ),
      ],
      [
        'a rotated-out nonce',
        issueDpopNonce({
          key: deriveDpopNonceKeys([{ key: Buffer.from(overrides.cookieKeys[0]!, 'base64url') }])[0]!,
          audience: PUBLIC_URL,
          now: Date.now() - 20 * 60_000,
        }),
      ],
    ] as const) {
      const res = await call(a.local, await client.proof('POST', htu, token, bad));
      t.equal(res.statusCode, 401, name);
      t.match(await res.body.json(), { reason: 'use_dpop_nonce' }, name);
      t.match(res.headers['dpop-nonce'], NONCE_FORM, `${name}: answered with a current nonce`);
    }

    const wrongUrl = await call(a.local, await client.proof('POST', `${PUBLIC_URL}/elsewhere`, token, nonce as string));
    t.equal(wrongUrl.statusCode, 401);
    t.match(await wrongUrl.body.json(), { reason: 'invalid_dpop_proof' });
    t.match(wrongUrl.headers['dpop-nonce'], NONCE_FORM, 'every refused proof carries a nonce');
  },
);

t.test('nonces survive a cookie-key rotation: the newest key issues, every listed key verifies', async (t) => {
  const upstream = await startUpstream(t);
  const oldKey = cookieKey();
  const newKey = cookieKey();
  const before = await startTestGateway(t, {
    upstream: upstream.url,
    policy: POLICY,
    overrides: { publicUrl: PUBLIC_URL, dpopNonce: true, cookieKeys: [oldKey] },
  });
  const after = await startTestGateway(t, {
    upstream: upstream.url,
    policy: POLICY,
    overrides: { publicUrl: PUBLIC_URL, dpopNonce: true, cookieKeys: [newKey, oldKey] },
  });
  const client = await dpopClient();
  const token = await signAccessToken({ audience: PUBLIC_URL, jkt: client.jkt });
  const htu = `${PUBLIC_URL}/x`;
  const call = async (base: string, nonce?: string) =>
    request(`${base}/x`, {
      headers: { authorization: `DPoP ${token}`, dpop: await client.proof('GET', htu, token, nonce) },
    });

  const oldNonce = (await call(before.local)).headers['dpop-nonce'] as string;
  const newNonce = (await call(after.local)).headers['dpop-nonce'] as string;
  t.not(oldNonce, newNonce, 'the rotated replica issues under the new key');
  t.equal((await call(after.local, oldNonce)).statusCode, 200, 'a nonce from a replica not yet rotated still passes');
  t.equal(
    (await call(before.local, newNonce)).statusCode,
    401,
    'a replica without the new key refuses its nonces (roll keys out before using them)',
  );
});

t.test('forward auth asks for the nonce the same way', async (t) => {
  const gw = await startTestGateway(t, { policy: POLICY, overrides: { dpopNonce: true } });
  const client = await dpopClient();
  const token = await signAccessToken({ audience: gw.url, jkt: client.jkt });
  const htu = `${gw.url}/api/items`;
  const ask = async (nonce?: string) =>
    request(`${gw.url}/_gate/auth`, {
      headers: {
        authorization: `DPoP ${token}`,
        dpop: await client.proof('GET', htu, token, nonce),
        'x-forwarded-method': 'GET',
        'x-forwarded-uri': '/api/items',
      },
    });
  const refused = await ask();
  t.equal(refused.statusCode, 401);
  t.match(String(refused.headers['www-authenticate']), /error="use_dpop_nonce"/);
  const nonce = refused.headers['dpop-nonce'] as string;
  t.ok(nonce);
  await refused.body.dump();
  const allowed = await ask(nonce);
  t.equal(allowed.statusCode, 200);
  t.equal(allowed.headers['x-auth-subject'], 'user-1');
});

t.test('with dpopNonce off (the default), proofs need no nonce and no DPoP-Nonce is sent', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, {
    upstream: upstream.url,
    policy: POLICY,
    overrides: { publicUrl: PUBLIC_URL },
  });
  const client = await dpopClient();
  const token = await signAccessToken({ audience: PUBLIC_URL, jkt: client.jkt });
  const ok = await request(`${gw.local}/x`, {
    headers: { authorization: `DPoP ${token}`, dpop: await client.proof('GET', `${PUBLIC_URL}/x`, token) },
  });
  t.equal(ok.statusCode, 200);
  await ok.body.dump();
  const refused = await request(`${gw.local}/x`, {
    headers: { authorization: `DPoP ${token}`, dpop: await client.proof('GET', `${PUBLIC_URL}/y`, token) },
  });
  t.equal(refused.statusCode, 401);
  t.equal(refused.headers['dpop-nonce'], undefined);
  await refused.body.dump();
});

t.test('nonce keys are derived from the cookie keys, one each, and are not the cookie keys', async (t) => {
  const key = randomBytes(32);
  const [derived] = deriveDpopNonceKeys([{ key }]);
  t.equal(derived!.length, 32);
  t.not(Buffer.from(derived!).toString('hex'), key.toString('hex'));
  t.same(deriveDpopNonceKeys([{ key }]), [derived], 'deterministic, so replicas agree');
  t.equal(deriveDpopNonceKeys([{ key: randomBytes(32) }, { key }]).length, 2);
});
