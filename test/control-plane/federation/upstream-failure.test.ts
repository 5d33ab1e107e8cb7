import t from 'tap';
import { fail } from '#lib/errors/keyplane-error.js';
import { upstreamFailure } from '../../../control-plane/src/federation/oidc-upstream.js';

/** What a failure of openid-client or the guarded fetcher becomes: the reason the refusal page names. */
t.test('a guarded fetch that failed anywhere in the chain is an unreachable upstream', async (t) => {
  const refusal = fail('fetch_timeout', 'the target did not answer in time');
  const wrapped = Object.assign(new Error('something went wrong'), { cause: refusal });
  t.equal(upstreamFailure(wrapped, 'callback').reason, 'upstream_unreachable');
  t.equal(upstreamFailure(refusal, 'discovery').reason, 'upstream_unreachable');
});

t.test(
  'a discovery that failed otherwise is unreachable; a callback check that failed is an invalid answer',
  async (t) => {
    t.equal(
      upstreamFailure(new Error('"response" body "issuer" property does not match'), 'discovery').reason,
      'upstream_unreachable',
    );
    const invalid = upstreamFailure(new Error('unexpected JWT "aud" (audience) claim value'), 'callback');
    t.equal(invalid.reason, 'upstream_response_invalid');
    t.match(invalid.message, /aud/, 'the message names the failed check');
    t.equal(
      upstreamFailure(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), 'callback').reason,
      'upstream_unreachable',
    );
  },
);
