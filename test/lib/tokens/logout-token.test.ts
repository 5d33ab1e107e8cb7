import t from 'tap';
import { decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify } from 'jose';
import { BACKCHANNEL_LOGOUT_EVENT, buildLogoutTokenClaims, signLogoutToken } from '#lib/tokens/logout-token.js';

t.test('a logout token states iss, aud, iat, exp, jti, sub, sid and the event, and no nonce', async (t) => {
  const claims = buildLogoutTokenClaims({
    issuer: 'https://id.example.com',
    clientId: 'cl_1',
    subject: 'usr_1',
    sessionId: 'ses_1',
    jti: 'j1',
    now: 1_795_000_000_500,
    lifetimeSeconds: 120,
  });
  t.same(claims, {
    iss: 'https://id.example.com',
    aud: 'cl_1',
    iat: 1_795_000_000,
    exp: 1_795_000_120,
    jti: 'j1',
    sub: 'usr_1',
    sid: 'ses_1',
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
  });
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const token = await signLogoutToken(claims, { kid: 'k1', privateKey });
  t.same(decodeProtectedHeader(token), { alg: 'ES256', kid: 'k1', typ: 'logout+jwt' });
  const { payload } = await jwtVerify(token, publicKey, {
    typ: 'logout+jwt',
    currentDate: new Date(1_795_000_010_000),
  });
  t.notOk('nonce' in payload);
  t.ok(await exportJWK(publicKey));
});
