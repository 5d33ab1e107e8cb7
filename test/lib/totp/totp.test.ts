import t from 'tap';
import { Secret, TOTP, URI } from 'otpauth';
import {
  buildTotpUri,
  generateTotpCode,
  generateTotpSecret,
  renderTotpQrSvg,
  totpStepAt,
  verifyTotpCode,
  TOTP_PERIOD_SECONDS,
} from '#lib/totp/totp.js';

const NOW = Date.parse('2026-11-22T12:00:10Z');
const STEP_MS = TOTP_PERIOD_SECONDS * 1000;

t.test('generates a 160-bit base32 secret, different each time', async (t) => {
  const a = generateTotpSecret();
  const b = generateTotpSecret();
  t.match(a.base32, /^[A-Z2-7]{32}$/);
  t.not(a.base32, b.base32);
});

t.test('builds an otpauth URI that authenticator apps import', async (t) => {
  const { base32 } = generateTotpSecret();
  const uri = buildTotpUri(base32, { issuer: 'Keyplane', accountName: 'ada' });
  t.match(uri, /^otpauth:\/\/totp\/Keyplane:ada\?/);
  const parsed = URI.parse(uri) as TOTP;
  t.equal(parsed.secret.base32, base32);
  t.equal(parsed.digits, 6);
  t.equal(parsed.period, 30);
  t.equal(parsed.algorithm, 'SHA1');
});

t.test('renders the URI as a self-contained SVG', async (t) => {
  const svg = await renderTotpQrSvg('otpauth://totp/Keyplane:ada?secret=JBSWY3DPEHPK3PXP');
  t.match(svg, /^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  t.notMatch(svg, /<script|on\w+=/i);
});

t.test('accepts the current code and one step either side, nothing further', async (t) => {
  const { base32 } = generateTotpSecret();
  const opts = { secretBase32: base32, now: NOW, lastUsedStep: null };
  const step = totpStepAt(NOW);
  t.same(verifyTotpCode(generateTotpCode(base32, NOW), opts), { ok: true, step });
  t.same(verifyTotpCode(generateTotpCode(base32, NOW - STEP_MS), opts), { ok: true, step: step - 1 });
  t.same(verifyTotpCode(generateTotpCode(base32, NOW + STEP_MS), opts), { ok: true, step: step + 1 });
  t.same(verifyTotpCode(generateTotpCode(base32, NOW - 2 * STEP_MS), opts), { ok: false, why: 'wrong' });
  t.same(verifyTotpCode(generateTotpCode(base32, NOW + 2 * STEP_MS), opts), { ok: false, why: 'wrong' });
});

t.test('matches codes from an independent RFC 6238 implementation', async (t) => {
  const { base32 } = generateTotpSecret();
  const other = new TOTP({ secret: Secret.fromBase32(base32) }).generate({ timestamp: NOW });
  t.equal(verifyTotpCode(other, { secretBase32: base32, now: NOW, lastUsedStep: null }).ok, true);
});

t.test('refuses a code whose time step was already used (replay)', async (t) => {
  const { base32 } = generateTotpSecret();
  const code = generateTotpCode(base32, NOW);
  const first = verifyTotpCode(code, { secretBase32: base32, now: NOW, lastUsedStep: null });
  t.equal(first.ok, true);
  const step = first.ok ? first.step : 0;
  t.same(verifyTotpCode(code, { secretBase32: base32, now: NOW + 5000, lastUsedStep: step }), {
    ok: false,
    why: 'replayed',
  });
  // An older step inside the window is refused too once a later one was used.
  const earlier = generateTotpCode(base32, NOW - STEP_MS);
  t.same(verifyTotpCode(earlier, { secretBase32: base32, now: NOW, lastUsedStep: step }), {
    ok: false,
    why: 'replayed',
  });
  // The next step's code is fine.
  const next = generateTotpCode(base32, NOW + STEP_MS);
  t.same(verifyTotpCode(next, { secretBase32: base32, now: NOW + STEP_MS, lastUsedStep: step }), {
    ok: true,
    step: step + 1,
  });
});

t.test('refuses malformed codes without evaluating them', async (t) => {
  const { base32 } = generateTotpSecret();
  for (const code of ['', '12345', '1234567', 'abcdef', '12 34 5x']) {
    t.same(
      verifyTotpCode(code, { secretBase32: base32, now: NOW, lastUsedStep: null }),
      { ok: false, why: 'malformed' },
      JSON.stringify(code),
    );
  }
  const spaced = generateTotpCode(base32, NOW).replace(/^(\d{3})/, '$1 ');
  t.equal(
    verifyTotpCode(spaced, { secretBase32: base32, now: NOW, lastUsedStep: null }).ok,
    true,
    'a space in the middle is ignored',
  );
});

t.test('a wrong code is wrong', async (t) => {
  const { base32 } = generateTotpSecret();
  const right = generateTotpCode(base32, NOW);
  const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');
  t.same(verifyTotpCode(wrong, { secretBase32: base32, now: NOW, lastUsedStep: null }).ok, false);
});
