import t from 'tap';
import { BACKCHANNEL_LOGOUT_EVENT, checkLogoutTokenClaims } from '#lib/federation/logout-token.js';

/** Back-Channel Logout 1.0 §2.4, §2.6: what a verified logout token must and must not hold. */
const events = { [BACKCHANNEL_LOGOUT_EVENT]: {} };

t.test('a logout token with the event, a jti and a sid or sub passes', async (t) => {
  t.same(checkLogoutTokenClaims({ events, jti: 'j1', sid: 's1' }, {}), { ok: true, jti: 'j1', sid: 's1' });
  t.same(checkLogoutTokenClaims({ events, jti: 'j1', sub: 'u1' }, { typ: 'logout+jwt' }), {
    ok: true,
    jti: 'j1',
    sub: 'u1',
  });
  t.match(checkLogoutTokenClaims({ events, jti: 'j1', sub: 'u1' }, { typ: 'application/logout+jwt' }), { ok: true });
});

t.test('refuses what the spec refuses', async (t) => {
  const refused = (claims: Record<string, unknown>, header: { typ?: unknown } = {}) =>
    checkLogoutTokenClaims({ events, jti: 'j', sid: 's', ...claims }, header).ok;
  t.equal(refused({ events: undefined }), false, 'no events');
  t.equal(refused({ events: { [BACKCHANNEL_LOGOUT_EVENT]: 'yes' } }), false, 'the event is not an object');
  t.equal(refused({ events: { other: {} } }), false, 'another event');
  t.equal(refused({ nonce: 'n' }), false, 'a nonce');
  t.equal(refused({ jti: undefined }), false, 'no jti');
  t.equal(refused({ sid: undefined }), false, 'neither sid nor sub');
  t.equal(refused({ sid: 'x'.repeat(256) }), false, 'an oversized sid counts as none');
  t.equal(refused({}, { typ: 'at+jwt' }), false, 'an access token');
  t.equal(refused({}, { typ: 42 }), false, 'a typ that is no string');
});
