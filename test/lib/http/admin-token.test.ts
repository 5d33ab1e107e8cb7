import t from 'tap';
import { KeyplaneError } from '#lib/errors/keyplane-error.js';
import { presentsAdminToken, requireAdminToken } from '#lib/http/admin-token.js';

const TOKEN = 'adm_0123456789abcdef';

function refusalOf(run: () => unknown): KeyplaneError {
  try {
    run();
  } catch (error) {
    if (error instanceof KeyplaneError) return error;
    throw error;
  }
  throw new Error('not refused');
}

t.test('the admin token as a Bearer token acts as the operator; no header leaves the session to decide', async (t) => {
  t.equal(presentsAdminToken(TOKEN, `Bearer ${TOKEN}`), true);
  t.equal(presentsAdminToken(TOKEN, `bearer  ${TOKEN}`), true, 'the scheme is case-insensitive (RFC 9110 §11.1)');
  t.equal(presentsAdminToken(TOKEN, undefined), false);
  t.equal(presentsAdminToken(undefined, undefined), false);
  t.doesNotThrow(() => requireAdminToken(TOKEN, `Bearer ${TOKEN}`));
});

t.test('any other Authorization header is refused, never passed over for the session', async (t) => {
  for (const header of [
    `Bearer ${TOKEN}x`,
    `Basic ${Buffer.from(`a:${TOKEN}`).toString('base64')}`,
    'Bearer ',
    TOKEN,
  ]) {
    const refused = refusalOf(() => presentsAdminToken(TOKEN, header));
    t.equal(refused.reason, 'unauthorized', header);
    t.equal(refused.status, 401);
    t.same(refused.headers, { 'www-authenticate': 'Bearer error="invalid_token"' });
    t.same(refused.toEnvelope(), {
      ok: false,
      reason: 'unauthorized',
      message: 'send the admin token as a Bearer token',
    });
  }
  const off = refusalOf(() => presentsAdminToken(undefined, `Bearer ${TOKEN}`));
  t.equal(off.reason, 'unauthorized', 'no admin token configured: every presented one is refused');
  t.same(off.headers, { 'www-authenticate': 'Bearer' });
});

t.test('a protocol endpoint gets the RFC 6750 pair in the same refusal', async (t) => {
  const refused = refusalOf(() => presentsAdminToken(TOKEN, 'Bearer wrong', { oauth: true }));
  t.match(refused.toEnvelope(), { ok: false, reason: 'unauthorized', error: 'invalid_token' });
});

t.test('the admin API needs the token itself', async (t) => {
  const missing = refusalOf(() => requireAdminToken(TOKEN, undefined));
  t.same(missing.toEnvelope(), {
    ok: false,
    reason: 'unauthorized',
    message: 'send the admin token as a Bearer token',
  });
  t.same(missing.headers, { 'www-authenticate': 'Bearer error="invalid_token"' });
  const off = refusalOf(() => requireAdminToken(undefined, `Bearer ${TOKEN}`));
  t.equal(off.message, 'the admin API is off: no admin token is configured');
  t.same(off.headers, { 'www-authenticate': 'Bearer' });
});
