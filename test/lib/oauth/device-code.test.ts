import t from 'tap';
import {
  USER_CODE_ALPHABET,
  decideDevicePoll,
  generateUserCode,
  normalizeUserCode,
  type DeviceAuthorization,
} from '#lib/oauth/device-code.js';

t.test('user codes: 8 unambiguous consonants shown as XXXX-XXXX, typed in any case and spacing', async (t) => {
  const codes = Array.from({ length: 200 }, generateUserCode);
  t.ok(
    codes.every((code) => /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/.test(code)),
    'every code is in the format',
  );
  t.ok(new Set(codes).size > 190, 'and they differ');
  t.notMatch(USER_CODE_ALPHABET, /[AEIOUY0-9]/, 'no vowels, no digits');
  t.equal(normalizeUserCode('bcdf-ghjk'), 'BCDFGHJK');
  t.equal(normalizeUserCode(' BCDF GHJK '), 'BCDFGHJK');
  t.equal(normalizeUserCode('BCDF-GHJ'), null, 'too short');
  t.equal(normalizeUserCode('BCDF-GHJA'), null, 'a vowel is never in a code');
  t.equal(normalizeUserCode(['BCDFGHJK']), null);
  t.equal(normalizeUserCode('B'.repeat(40)), null);
});

t.test('a poll is answered as RFC 8628 §3.5 says', async (t) => {
  const pending: DeviceAuthorization = {
    clientId: 'cl_1',
    scopes: ['openid'],
    resource: null,
    userCode: 'BCDFGHJK',
    expiresAt: 1000,
    status: 'pending',
  };
  const poll = (
    authorization: DeviceAuthorization | null,
    over: Partial<{ clientId: string; now: number; pollAllowed: boolean }> = {},
  ) => decideDevicePoll({ authorization, clientId: 'cl_1', now: 500, pollAllowed: true, ...over });
  t.equal(poll(null), 'invalid_grant');
  t.equal(poll(pending, { clientId: 'cl_2' }), 'invalid_grant');
  t.equal(poll(pending, { now: 1000 }), 'expired_token');
  t.equal(poll(pending, { pollAllowed: false }), 'slow_down');
  t.equal(poll(pending), 'authorization_pending');
  t.equal(poll({ ...pending, status: 'denied' }), 'access_denied');
  t.equal(poll({ ...pending, status: 'approved' }), 'issue');
});
