import t from 'tap';
import { checkPkce, computeS256Challenge, isValidCodeChallenge, isValidCodeVerifier } from '#lib/pkce/check-pkce.js';

// RFC 7636 Appendix B.
const RFC_VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const RFC_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

t.test('accepts the RFC 7636 Appendix B vector', async (t) => {
  t.equal(computeS256Challenge(RFC_VERIFIER), RFC_CHALLENGE);
  t.same(checkPkce({ challenge: RFC_CHALLENGE, method: 'S256', verifier: RFC_VERIFIER }), { ok: true });
});

t.test('refuses the plain method', async (t) => {
  t.same(checkPkce({ challenge: RFC_VERIFIER, method: 'plain', verifier: RFC_VERIFIER }), {
    ok: false,
    failure: 'unsupported_method',
  });
  t.notOk(isValidCodeChallenge(RFC_VERIFIER, 'plain'));
  t.notOk(isValidCodeChallenge(RFC_CHALLENGE, undefined), 'a missing method is not S256');
  t.ok(isValidCodeChallenge(RFC_CHALLENGE, 'S256'));
});

t.test('refuses a wrong verifier', async (t) => {
  const other = 'x'.repeat(43);
  t.same(checkPkce({ challenge: RFC_CHALLENGE, method: 'S256', verifier: other }), { ok: false, failure: 'mismatch' });
});

t.test('refuses a missing verifier', async (t) => {
  t.same(checkPkce({ challenge: RFC_CHALLENGE, method: 'S256', verifier: undefined }), {
    ok: false,
    failure: 'invalid_verifier',
  });
});

t.test('refuses verifiers outside RFC 7636 §4.1 syntax', async (t) => {
  for (const bad of [
    'a'.repeat(42),
    'a'.repeat(129),
    `${'a'.repeat(42)}+`,
    `${'a'.repeat(42)}/`,
    `${'a'.repeat(42)}=`,
    `${'a'.repeat(42)} `,
    '',
  ]) {
    t.notOk(isValidCodeVerifier(bad), JSON.stringify(bad));
    t.same(checkPkce({ challenge: RFC_CHALLENGE, method: 'S256', verifier: bad }), {
      ok: false,
      failure: 'invalid_verifier',
    });
  }
  t.ok(isValidCodeVerifier('a'.repeat(43)));
  t.ok(isValidCodeVerifier(`${'A'.repeat(124)}-._~`));
});

t.test('refuses a malformed stored challenge', async (t) => {
  t.same(checkPkce({ challenge: 'short', method: 'S256', verifier: RFC_VERIFIER }), {
    ok: false,
    failure: 'invalid_challenge',
  });
  t.notOk(isValidCodeChallenge(`${RFC_CHALLENGE}=`, 'S256'));
});
