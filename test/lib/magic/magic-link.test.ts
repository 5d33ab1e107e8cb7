import t from 'tap';
import {
  hashLinkToken,
  issueEmailVerificationLink,
  issueMagicLink,
  redeemMagicLink,
  sameOriginReturn,
  type LinkRecord,
} from '#lib/magic/magic-link.js';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const TEN_MINUTES = 600_000;

function memoryLinks() {
  const records = new Map<string, LinkRecord>();
  return {
    records,
    find: async (hash: string) => records.get(hash) ?? null,
    consume: async (hash: string, now: number) => {
      const record = records.get(hash);
      if (!record || record.usedAt !== null) return false;
      record.usedAt = now;
      return true;
    },
  };
}

function issue() {
  return issueMagicLink({
    endpoint: 'http://localhost:4400/auth/magic',
    identityId: 'idn_1',
    emailId: 'eml_1',
    deviceId: 'dev_a',
    now: NOW,
    lifetimeMs: TEN_MINUTES,
    returnTo: '/account',
    project: 'Demo <app>',
  });
}

t.test('issues a 256-bit token and stores only its hash', async (t) => {
  const link = issue();
  t.match(link.token, /^[A-Za-z0-9_-]{43}$/);
  t.equal(link.record.tokenHash, hashLinkToken(link.token));
  t.notOk(JSON.stringify(link.record).includes(link.token), 'the record never holds the token');
  t.equal(link.record.expiresAt, NOW + TEN_MINUTES);
  t.equal(link.record.deviceId, 'dev_a');
  const url = new URL(link.url);
  t.equal(url.pathname, '/auth/magic');
  t.equal(url.searchParams.get('token'), link.token);
  t.equal(url.searchParams.get('return'), '/account');
  t.equal(url.searchParams.get('project'), 'Demo <app>');
  t.not(issue().token, link.token);
});

t.test('redeems once on the device that asked', async (t) => {
  const store = memoryLinks();
  const link = issue();
  store.records.set(link.record.tokenHash, link.record);
  const first = await redeemMagicLink(link.token, { purpose: 'signin', now: NOW + 1000, deviceId: 'dev_a', ...store });
  t.equal(first.ok, true);
  t.equal(first.ok && first.record.identityId, 'idn_1');
  const again = await redeemMagicLink(link.token, { purpose: 'signin', now: NOW + 2000, deviceId: 'dev_a', ...store });
  t.same(again.ok ? 'ok' : again.why, 'used');
});

t.test('refuses another device without consuming the link', async (t) => {
  const store = memoryLinks();
  const link = issue();
  store.records.set(link.record.tokenHash, link.record);
  for (const deviceId of ['dev_b', null, undefined]) {
    const other = await redeemMagicLink(link.token, { purpose: 'signin', now: NOW + 1000, deviceId, ...store });
    t.equal(other.ok ? 'ok' : other.why, 'wrong_device');
  }
  const right = await redeemMagicLink(link.token, { purpose: 'signin', now: NOW + 1000, deviceId: 'dev_a', ...store });
  t.equal(right.ok, true, 'still works on the right device');
});

t.test('refuses an expired, unknown, malformed or other-purpose token', async (t) => {
  const store = memoryLinks();
  const link = issue();
  store.records.set(link.record.tokenHash, link.record);
  const late = await redeemMagicLink(link.token, {
    purpose: 'signin',
    now: NOW + TEN_MINUTES,
    deviceId: 'dev_a',
    ...store,
  });
  t.equal(late.ok ? 'ok' : late.why, 'expired');
  const unknown = await redeemMagicLink('A'.repeat(43), { purpose: 'signin', now: NOW, deviceId: 'dev_a', ...store });
  t.equal(unknown.ok ? 'ok' : unknown.why, 'unknown');
  const malformed = await redeemMagicLink('short', { purpose: 'signin', now: NOW, deviceId: 'dev_a', ...store });
  t.equal(malformed.ok ? 'ok' : malformed.why, 'unknown');
  const purpose = await redeemMagicLink(link.token, { purpose: 'verify_email', now: NOW, ...store });
  t.equal(purpose.ok ? 'ok' : purpose.why, 'unknown');
});

t.test('of two concurrent redemptions exactly one wins', async (t) => {
  const store = memoryLinks();
  const link = issue();
  store.records.set(link.record.tokenHash, link.record);
  // Both pass the checks before either consumes: the atomic consume decides.
  const slowFind = async (hash: string) => {
    const record = store.records.get(hash);
    return record ? { ...record } : null;
  };
  const results = await Promise.all(
    [1, 2].map(() =>
      redeemMagicLink(link.token, {
        purpose: 'signin',
        now: NOW,
        deviceId: 'dev_a',
        find: slowFind,
        consume: store.consume,
      }),
    ),
  );
  t.equal(results.filter((r) => r.ok).length, 1);
});

t.test('verification links are not bound to a device', async (t) => {
  const store = memoryLinks();
  const link = issueEmailVerificationLink({
    endpoint: 'http://localhost:4400/auth/email/verify',
    identityId: 'idn_1',
    emailId: 'eml_1',
    now: NOW,
    lifetimeMs: TEN_MINUTES,
  });
  store.records.set(link.record.tokenHash, link.record);
  t.equal(link.record.deviceId, null);
  t.equal(new URL(link.url).searchParams.get('project'), null);
  const result = await redeemMagicLink(link.token, { purpose: 'verify_email', now: NOW, deviceId: null, ...store });
  t.equal(result.ok, true);
  const signin = await redeemMagicLink(link.token, { purpose: 'signin', now: NOW, deviceId: null, ...store });
  t.equal(signin.ok ? 'ok' : signin.why, 'unknown', 'a verification link never signs anyone in');
});

t.test('accepts only same-origin returns on the issuer', async (t) => {
  const issuer = 'http://localhost:4400';
  t.equal(sameOriginReturn('/account', issuer), '/account');
  t.equal(sameOriginReturn('/auth/authorize?client_id=x&state=y', issuer), '/auth/authorize?client_id=x&state=y');
  t.equal(sameOriginReturn('http://localhost:4400/account#top', issuer), '/account#top');
  t.equal(sameOriginReturn('http://localhost:4400', issuer), '/');
  for (const bad of [
    '//evil.example/x',
    '/\\evil.example',
    'https://evil.example/',
    'http://localhost:4401/account',
    'javascript:alert(1)',
    'account',
    '',
    '/a\nb',
    'http://localhost:4400@evil.example/',
    '/.//evil.example/x',
    '/a/..//evil.example',
    'http://localhost:4400/..//evil.example',
    '/%5cevil.example',
  ]) {
    t.equal(sameOriginReturn(bad, issuer), null, JSON.stringify(bad));
  }
});

t.test('normalizes plausible email addresses and refuses the rest', async (t) => {
  const { normalizeEmailAddress } = await import('#lib/magic/email-address.js');
  t.equal(normalizeEmailAddress('  Ada.Lovelace+kp@Example.COM '), 'ada.lovelace+kp@example.com');
  t.equal(normalizeEmailAddress('x@sub.example.org'), 'x@sub.example.org');
  for (const bad of [
    '',
    'ada',
    'ada@',
    '@example.com',
    'ada@example',
    'a b@example.com',
    'ada@@example.com',
    'ada@exa mple.com',
    '"ada"@example.com',
    'ada@-example.com',
    `${'a'.repeat(65)}@example.com`,
    `a@${'b'.repeat(250)}.com`,
    'ada@example.com\n',
  ]) {
    t.equal(
      normalizeEmailAddress(bad),
      bad.trim() === 'ada@example.com' ? 'ada@example.com' : null,
      JSON.stringify(bad),
    );
  }
});
