import t from 'tap';
import { readBodyAccessToken } from '#lib/oauth/access-token-header.js';

const FORM = 'application/x-www-form-urlencoded';

t.test('reads a Bearer token from a form-encoded POST body only (RFC 6750 §2.2)', async (t) => {
  t.equal(readBodyAccessToken('POST', FORM, { access_token: 'eyJ.a.b' }), 'eyJ.a.b');
  t.equal(readBodyAccessToken('POST', `${FORM}; charset=utf-8`, { access_token: 'x' }), 'x');
  t.equal(readBodyAccessToken('GET', FORM, { access_token: 'x' }), undefined, 'never with GET');
  t.equal(readBodyAccessToken('POST', 'application/json', { access_token: 'x' }), undefined, 'never from JSON');
  t.equal(readBodyAccessToken('POST', undefined, { access_token: 'x' }), undefined);
  t.equal(readBodyAccessToken('POST', FORM, {}), undefined, 'absent');
  t.equal(readBodyAccessToken('POST', FORM, undefined), undefined);
  t.equal(readBodyAccessToken('POST', FORM, { access_token: ['x', 'y'] }), null, 'repeated');
  t.equal(readBodyAccessToken('POST', FORM, { access_token: '' }), null, 'empty');
  t.equal(readBodyAccessToken('POST', FORM, { access_token: 'a b' }), null, 'not b64token syntax');
});
