import t from 'tap';
import { fail } from '#lib/errors/keyplane-error.js';
import { envelopeFor } from '../../../control-plane/src/plugins/errors.js';
import { oauthError } from '#lib/oauth/errors.js';
import { build } from '../../helpers/build.js';

// The RFC 6749 §5.2 pair comes from the one error handler, for routes marked `oauthErrors`.

t.test('envelopeFor adds the pair only on OAuth routes and never overrides one already set', async (t) => {
  t.same(envelopeFor(fail('rate_limited', 'slow')), { ok: false, reason: 'rate_limited', message: 'slow' });
  t.same(envelopeFor(fail('rate_limited', 'slow'), true), {
    ok: false,
    reason: 'rate_limited',
    message: 'slow',
    error: 'slow_down',
    error_description: 'slow',
  });
  t.match(envelopeFor(fail('internal', 'oops'), true), { error: 'server_error' });
  t.match(envelopeFor(fail('not_found', 'no'), true), { error: 'invalid_request' });
  t.match(envelopeFor(oauthError('invalid_grant', 'expired'), true), {
    error: 'invalid_grant',
    error_description: 'expired',
  });
});

t.test('failures before the handler of the token and revocation endpoints carry the pair', async (t) => {
  const { app } = await build(t);
  for (const url of ['/auth/token', '/auth/revoke']) {
    const res = await app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      payload: '{"grant_type":',
    });
    t.equal(res.statusCode, 400, url);
    t.match(
      res.json(),
      { ok: false, reason: 'invalid_request', error: 'invalid_request', error_description: String },
      url,
    );
  }
  const elsewhere = await app.inject({
    method: 'POST',
    url: '/auth/registration-options',
    headers: { 'content-type': 'application/json' },
    payload: '{"username":',
  });
  t.notOk('error' in elsewhere.json(), 'other routes answer the plain envelope');
});
