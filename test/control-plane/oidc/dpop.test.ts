import t from 'tap';
import { SignJWT, decodeJwt } from 'jose';
import { TEST_ISSUER } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import {
  ADMIN,
  REDIRECT,
  dpopKey,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  registerClient,
} from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['oidc', 'clients'] as const;

async function setup(t: Parameters<typeof buildSignedIn>[0], metadata: Record<string, unknown> = {}) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const client = await registerClient(built.app, metadata);
  const { browser } = await built.signIn({ username: 'alice' });
  return { ...built, client, browser };
}

t.test(
  'a DPoP proof at the token endpoint binds the tokens: token_type DPoP, cnf.jkt, userinfo with a proof',
  async (t) => {
    const { app, client, browser } = await setup(t);
    const key = await dpopKey();
    const { verifier, challenge } = pkcePair();
    const { code } = await obtainCode(browser, goodRequest(client, challenge, { dpop_jkt: key.jkt }));
    const res = await exchangeCode(app, client, code, verifier, { dpop: await key.proof({}) });
    t.equal(res.statusCode, 200, res.body);
    const body = res.json();
    t.equal(body.token_type, 'DPoP');
    t.same(decodeJwt(body.access_token).cnf, { jkt: key.jkt });

    const userinfo = `${TEST_ISSUER}/auth/userinfo`;
    const ok = await app.inject({
      method: 'GET',
      url: '/auth/userinfo',
      headers: {
        authorization: `DPoP ${body.access_token}`,
        dpop: await key.proof({ htm: 'GET', htu: userinfo, accessToken: body.access_token }),
      },
    });
    t.equal(ok.statusCode, 200, ok.body);

    const bearer = await app.inject({
      method: 'GET',
      url: '/auth/userinfo',
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    t.equal(bearer.statusCode, 401, 'a DPoP-bound token presented as Bearer is refused');
    t.match(bearer.headers['www-authenticate'], /error="invalid_token"/);
    t.match(bearer.headers['www-authenticate'], /DPoP algs="ES256 EdDSA"/);

    const noProof = await app.inject({
      method: 'GET',
      url: '/auth/userinfo',
      headers: { authorization: `DPoP ${body.access_token}` },
    });
    t.equal(noProof.statusCode, 401);

    const other = await dpopKey();
    const wrongKey = await app.inject({
      method: 'GET',
      url: '/auth/userinfo',
      headers: {
        authorization: `DPoP ${body.access_token}`,
        dpop: await other.proof({ htm: 'GET', htu: userinfo, accessToken: body.access_token }),
      },
    });
    t.equal(wrongKey.statusCode, 401, 'a proof by another key');
    t.match(
      wrongKey.headers['www-authenticate'],
      /^Bearer realm="keyplane", error="invalid_dpop_proof"|DPoP algs="ES256 EdDSA", error="invalid_dpop_proof"/,
    );

    const noAth = await app.inject({
      method: 'GET',
      url: '/auth/userinfo',
      headers: { authorization: `DPoP ${body.access_token}`, dpop: await key.proof({ htm: 'GET', htu: userinfo }) },
    });
    t.equal(noAth.statusCode, 401, 'a proof without ath');
  },
);

t.test(
  'DPoP proof refusals at the token endpoint: replay, wrong htm, wrong htu, stale iat, dpop_jkt mismatch',
  async (t) => {
    const { app, client, browser } = await setup(t);
    const key = await dpopKey();
    const { verifier, challenge } = pkcePair();

    const replayed = await key.proof({});
    const first = await exchangeCode(
      app,
      client,
      (await obtainCode(browser, goodRequest(client, challenge))).code,
      verifier,
      { dpop: replayed },
    );
    t.equal(first.statusCode, 200);
    const cases: Array<[string, string]> = [
      ['a replayed proof', replayed],
      ['wrong htm', await key.proof({ htm: 'GET' })],
      ['wrong htu', await key.proof({ htu: `${TEST_ISSUER}/auth/userinfo` })],
      ['another host in htu', await key.proof({ htu: 'https://evil.example.com/auth/token' })],
      ['a stale iat', await key.proof({ iat: Math.floor(Date.now() / 1000) - 600 })],
      ['an iat in the future', await key.proof({ iat: Math.floor(Date.now() / 1000) + 600 })],
    ];
    for (const [name, proof] of cases) {
      const { code } = await obtainCode(browser, goodRequest(client, challenge));
      const res = await exchangeCode(app, client, code, verifier, { dpop: proof });
      t.equal(res.statusCode, 400, name);
      t.match(res.json(), { ok: false, reason: 'invalid_dpop_proof', error: 'invalid_dpop_proof' }, name);
    }

    const hs = await new SignJWT({
      htm: 'POST',
      htu: `${TEST_ISSUER}/auth/token`,
      jti: 'x',
      iat: Math.floor(Date.now() / 1000),
    })
      .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt' })
      .sign(new TextEncoder().encode('0123456789abcdef0123456789abcdef'));
    const { code: c1 } = await obtainCode(browser, goodRequest(client, challenge));
    t.equal(
      (await exchangeCode(app, client, c1, verifier, { dpop: hs })).json().reason,
      'invalid_dpop_proof',
      'an HS256 proof',
    );

    const other = await dpopKey();
    const { code: c2 } = await obtainCode(browser, goodRequest(client, challenge, { dpop_jkt: other.jkt }));
    const mismatch = await exchangeCode(app, client, c2, verifier, { dpop: await key.proof({}) });
    t.match(
      mismatch.json(),
      { reason: 'invalid_dpop_proof', error_description: /dpop_jkt/ },
      'dpop_jkt from authorize must match the proof key',
    );
    const { code: c3 } = await obtainCode(browser, goodRequest(client, challenge, { dpop_jkt: other.jkt }));
    t.equal(
      (await exchangeCode(app, client, c3, verifier)).json().reason,
      'invalid_dpop_proof',
      'dpop_jkt without a proof',
    );
  },
);

t.test("a public client's refresh token is bound to its DPoP key", async (t) => {
  const { app, browser } = await setup(t);
  const pub = await registerClient(app, { token_endpoint_auth_method: 'none' });
  const key = await dpopKey();
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(pub, challenge));
  const form = (extra: Record<string, string>) =>
    new URLSearchParams({ client_id: pub.client_id, ...extra }).toString();
  const headers = async (k = key) => ({ 'content-type': 'application/x-www-form-urlencoded', dpop: await k.proof({}) });
  const first = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: await headers(),
    payload: form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier }),
  });
  t.equal(first.statusCode, 200, first.body);
  const rt = first.json().refresh_token;

  const bare = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: form({ grant_type: 'refresh_token', refresh_token: rt }),
  });
  t.equal(bare.json().reason, 'invalid_grant', 'no proof');
  const stranger = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: await headers(await dpopKey()),
    payload: form({ grant_type: 'refresh_token', refresh_token: rt }),
  });
  t.equal(stranger.json().reason, 'invalid_grant', 'another key');
  const good = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: await headers(),
    payload: form({ grant_type: 'refresh_token', refresh_token: rt }),
  });
  t.equal(good.statusCode, 200, 'the bound key still works: failed attempts did not burn the token');
  t.equal(good.json().token_type, 'DPoP');
});

t.test('a client registered with dpop_bound_access_tokens must send a proof', async (t) => {
  const { app, browser } = await setup(t);
  const strict = await registerClient(app, { dpop_bound_access_tokens: true });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(strict, challenge));
  const res = await exchangeCode(app, strict, code, verifier);
  t.equal(res.json().reason, 'invalid_dpop_proof');
});

t.test('with oidc.dpopNonce on, proofs need the server nonce (use_dpop_nonce with a DPoP-Nonce header)', async (t) => {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN, 'oidc.dpopNonce': true } });
  const client = await registerClient(built.app);
  const { browser } = await built.signIn({ username: 'alice' });
  const key = await dpopKey();
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  const first = await exchangeCode(built.app, client, code, verifier, { dpop: await key.proof({}) });
  t.equal(first.statusCode, 400);
  t.match(first.json(), { reason: 'use_dpop_nonce', error: 'use_dpop_nonce' });
  const nonce = String(first.headers['dpop-nonce']);
  t.match(nonce, /^\d+\.[A-Za-z0-9_-]{43}$/);
  const { code: code2 } = await obtainCode(browser, goodRequest(client, challenge));
  const second = await exchangeCode(built.app, client, code2, verifier, { dpop: await key.proof({ nonce }) });
  t.equal(second.statusCode, 200);
  t.ok(second.headers['dpop-nonce'], 'a fresh nonce on success too');
  const token = second.json().access_token;
  const userinfo = `${TEST_ISSUER}/auth/userinfo`;
  const tokenNonce = await built.app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: {
      authorization: `DPoP ${token}`,
      dpop: await key.proof({ htm: 'GET', htu: userinfo, accessToken: token, nonce }),
    },
  });
  t.equal(tokenNonce.statusCode, 401, "the token endpoint's nonce is not valid at userinfo");
  t.match(tokenNonce.headers['www-authenticate'], /error="use_dpop_nonce"/);
  const rsNonce = String(tokenNonce.headers['dpop-nonce']);
  const ok = await built.app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: {
      authorization: `DPoP ${token}`,
      dpop: await key.proof({ htm: 'GET', htu: userinfo, accessToken: token, nonce: rsNonce }),
    },
  });
  t.equal(ok.statusCode, 200);
});
