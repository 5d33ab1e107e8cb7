import t from 'tap';
import { hashClientSecret, parseClientSecretBasic, verifyClientSecret } from '#lib/oauth/client-auth.js';
import { checkTokenScheme, isJwkThumbprint, readAccessToken } from '#lib/oauth/access-token-header.js';

const basic = (raw: string) => `Basic ${Buffer.from(raw).toString('base64')}`;

t.test('parses client_secret_basic with form-encoded parts', async (t) => {
  t.same(parseClientSecretBasic(basic('cl_1:s3cret')), { clientId: 'cl_1', clientSecret: 's3cret' });
  t.same(parseClientSecretBasic(basic('cl%3A1:a%2Bb+c')), { clientId: 'cl:1', clientSecret: 'a+b c' });
  t.same(parseClientSecretBasic(basic('cl_1:')), { clientId: 'cl_1', clientSecret: '' });
  t.same(
    parseClientSecretBasic(`basic ${Buffer.from('a:b').toString('base64')}`),
    { clientId: 'a', clientSecret: 'b' },
    'scheme is case-insensitive',
  );
});

t.test('refuses malformed client_secret_basic', async (t) => {
  for (const bad of [undefined, 'Bearer abc', basic('no-colon'), basic(':secret'), 'Basic !!!', basic('%E0%A4%A:x')]) {
    t.equal(parseClientSecretBasic(bad), null, String(bad));
  }
});

t.test('verifies a client secret against its hash only', async (t) => {
  const hash = hashClientSecret('s3cret');
  t.ok(verifyClientSecret('s3cret', hash));
  t.notOk(verifyClientSecret('s3cret ', hash));
  t.notOk(verifyClientSecret(undefined, hash));
  t.notOk(verifyClientSecret('s3cret', null), 'a client without a secret never matches');
  t.notOk(verifyClientSecret('s3cret', 'not-a-hash'));
});

t.test('reads Bearer and DPoP access tokens', async (t) => {
  t.same(readAccessToken('Bearer abc.def-ghi'), { scheme: 'Bearer', token: 'abc.def-ghi' });
  t.same(readAccessToken('dpop abc'), { scheme: 'DPoP', token: 'abc' });
  for (const bad of [undefined, '', 'Bearer', 'Bearer a b', 'Basic abc', 'Bearer ab"c'])
    t.equal(readAccessToken(bad), null, String(bad));
});

t.test('refuses a DPoP-bound token presented as Bearer', async (t) => {
  t.equal(checkTokenScheme('Bearer', 'jkt'), 'bearer_for_bound_token');
  t.equal(checkTokenScheme('DPoP', undefined), 'dpop_for_unbound_token');
  t.equal(checkTokenScheme('DPoP', 'jkt'), null);
  t.equal(checkTokenScheme('Bearer', undefined), null);
  t.ok(isJwkThumbprint('0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I'));
  t.notOk(isJwkThumbprint('short'));
});
