import t from 'tap';
import { checkDpopNonce, issueDpopNonce } from '#lib/dpop/nonce.js';

const key = new Uint8Array(32).fill(9);
const NOW = Date.parse('2026-11-22T12:00:00Z');
const opts = (now = NOW, audience = 'https://id.example.com/auth/token') => ({ key, audience, now });

t.test('accepts a nonce in its window and the next', async (t) => {
  const nonce = issueDpopNonce(opts());
  t.ok(checkDpopNonce(nonce, opts()));
  t.ok(checkDpopNonce(nonce, opts(NOW + 300_000)));
});

t.test('refuses an expired nonce', async (t) => {
  const nonce = issueDpopNonce(opts());
  t.notOk(checkDpopNonce(nonce, opts(NOW + 600_000)));
});

t.test('refuses a nonce from the future, another audience, another key, or forged', async (t) => {
  const nonce = issueDpopNonce(opts());
  t.notOk(checkDpopNonce(issueDpopNonce(opts(NOW + 600_000)), opts()), 'future window');
  t.notOk(checkDpopNonce(nonce, opts(NOW, 'https://api.example.com')), 'another server');
  t.notOk(checkDpopNonce(nonce, { ...opts(), key: new Uint8Array(32).fill(8) }), 'another key');
  const [window] = nonce.split('.');
  t.notOk(checkDpopNonce(`${window}.${'A'.repeat(43)}`, opts()), 'forged mac');
  t.notOk(checkDpopNonce('garbage', opts()));
  t.notOk(checkDpopNonce(`${Number(window) + 1}.${nonce.split('.')[1]}`, opts(NOW + 300_000)), 'mac of another window');
});

t.test('refuses a short key', async (t) => {
  t.throws(() => issueDpopNonce({ ...opts(), key: new Uint8Array(16) }));
});

t.test('maps a refused proof to the token-endpoint and resource answers', async (t) => {
  const { DpopError } = await import('#lib/dpop/errors.js');
  const { dpopRefusal, dpopChallenge } = await import('#lib/dpop/respond.js');
  const token = dpopRefusal(
    new DpopError('use_dpop_nonce', 'nonce', 'the DPoP proof must carry the server nonce'),
    'token',
    'n-1',
  );
  t.equal(token.status, 400);
  t.same(token.headers, { 'dpop-nonce': 'n-1' });
  t.match(token.toEnvelope(), { ok: false, reason: 'use_dpop_nonce', error: 'use_dpop_nonce' });
  const resource = dpopRefusal(
    new DpopError('invalid_dpop_proof', 'htu', 'the DPoP proof is for another URI'),
    'resource',
  );
  t.equal(resource.status, 401);
  t.equal(
    resource.headers['www-authenticate'],
    'DPoP algs="ES256 EdDSA", error="invalid_dpop_proof", error_description="the DPoP proof is for another URI"',
  );
  t.equal(dpopChallenge(), 'DPoP algs="ES256 EdDSA"');
});
