import t from 'tap';
import { randomBytes } from 'node:crypto';
import { jwtDecrypt } from 'jose';
import {
  CHUNK_SIZE,
  clearSessionCookies,
  parseCookieHeader,
  readLoginCookie,
  readSessionCookies,
  writeLoginCookie,
  writeSessionCookies,
  type GateSession,
} from '#lib/gateway-protocol/session-cookie.js';

const NOW = Date.UTC(2026, 10, 22, 3, 0, 0);
const keyA = { key: randomBytes(32) };
const keyB = { key: randomBytes(32) };
const session: GateSession = {
  sid: 'sid-1',
  sub: 'user-1',
  principalType: 'human',
  assurance: 'passkey',
  scopes: ['openid'],
  email: 'a@example.test',
  emailVerified: true,
};

/** Turns Set-Cookie values into what a browser would send back. */
function jar(setCookies: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of setCookies) {
    const [pair] = line.split(';');
    const index = pair!.indexOf('=');
    const value = pair!.slice(index + 1);
    if (value && !/Max-Age=0/.test(line)) out[pair!.slice(0, index)] = value;
  }
  return out;
}

t.test('round trip with the cookie attributes', async (t) => {
  const cookies = await writeSessionCookies(session, { keys: [keyA], now: NOW, secure: false, ttlSeconds: 3600 });
  t.equal(cookies.length, 1);
  t.match(cookies[0], /^kp_gate_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=3600$/);
  t.match(
    await readSessionCookies(jar(cookies), { keys: [keyA], now: NOW + 1000, secure: false }),
    { ...session, exp: NOW / 1000 + 3600 },
    'with its expiry',
  );
  const secure = await writeSessionCookies(session, { keys: [keyA], now: NOW, secure: true, ttlSeconds: 3600 });
  t.match(secure[0], /^__Host-kp_gate_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=3600$/);
  t.match(await readSessionCookies(jar(secure), { keys: [keyA], now: NOW, secure: true }), session);
  t.equal(
    await readSessionCookies(jar(cookies), { keys: [keyA], now: NOW, secure: true }),
    null,
    'the plain name is not read on https',
  );
});

t.test('keys rotate: the newest encrypts, every listed key decrypts', async (t) => {
  const old = jar(await writeSessionCookies(session, { keys: [keyA], now: NOW, secure: false, ttlSeconds: 3600 }));
  t.match(
    await readSessionCookies(old, { keys: [keyB, keyA], now: NOW, secure: false }),
    session,
    'an old cookie still opens after rotation',
  );
  const fresh = jar(
    await writeSessionCookies(session, { keys: [keyB, keyA], now: NOW, secure: false, ttlSeconds: 3600 }),
  );
  t.equal(
    await readSessionCookies(fresh, { keys: [keyA], now: NOW, secure: false }),
    null,
    'written under the newest key',
  );
  t.equal(
    await readSessionCookies(old, { keys: [keyB], now: NOW, secure: false }),
    null,
    'a retired key no longer opens',
  );
});

t.test('large sessions are split into chunks and joined again', async (t) => {
  const big = {
    ...session,
    idToken: randomBytes(4000).toString('base64url'),
    refreshToken: randomBytes(1000).toString('base64url'),
  };
  const cookies = await writeSessionCookies(big, { keys: [keyA], now: NOW, secure: true, ttlSeconds: 60 });
  t.ok(cookies.length >= 2);
  t.match(cookies[0], /^__Host-kp_gate_session\.0=/);
  t.match(cookies[1], /^__Host-kp_gate_session\.1=/);
  for (const line of cookies)
    t.ok(line.split(';')[0]!.length <= CHUNK_SIZE + 40, 'each cookie stays under the browser limit');
  const browser = jar(cookies);
  t.match(await readSessionCookies(browser, { keys: [keyA], now: NOW, secure: true }), big);

  const small = await writeSessionCookies(session, {
    keys: [keyA],
    now: NOW,
    secure: true,
    ttlSeconds: 60,
    present: Object.keys(browser),
  });
  t.match(small[0], /^__Host-kp_gate_session=/);
  t.ok(
    small.some((line) => /^__Host-kp_gate_session\.0=; .*Max-Age=0/.test(line)),
    'stale chunks are cleared',
  );
  const cleared = clearSessionCookies(Object.keys(browser), true);
  t.equal(cleared.length, Object.keys(browser).length + 1);
});

t.test('tampering, a missing chunk and expiry are refused', async (t) => {
  const browser = jar(await writeSessionCookies(session, { keys: [keyA], now: NOW, secure: false, ttlSeconds: 60 }));
  const value = browser['kp_gate_session']!;
  const flipped = value.slice(0, -5) + (value.at(-5) === 'A' ? 'B' : 'A') + value.slice(-4);
  t.equal(await readSessionCookies({ kp_gate_session: flipped }, { keys: [keyA], now: NOW, secure: false }), null);
  t.equal(await readSessionCookies({ kp_gate_session: 'garbage' }, { keys: [keyA], now: NOW, secure: false }), null);
  t.equal(await readSessionCookies({}, { keys: [keyA], now: NOW, secure: false }), null);
  t.equal(await readSessionCookies(browser, { keys: [keyA], now: NOW + 61_000, secure: false }), null, 'expired');

  const big = jar(
    await writeSessionCookies(
      { ...session, idToken: 'x'.repeat(6000) },
      { keys: [keyA], now: NOW, secure: false, ttlSeconds: 60 },
    ),
  );
  delete big['kp_gate_session.1'];
  t.equal(await readSessionCookies(big, { keys: [keyA], now: NOW, secure: false }), null, 'a missing chunk');
});

t.test('login cookies: one per state, never usable as a session', async (t) => {
  const options = { keys: [keyA], now: NOW, secure: false, ttlSeconds: 600 };
  const first = { state: 'state-aaaaaaaaaaaaaaaa', nonce: 'n1', codeVerifier: 'v1', returnTo: '/a' };
  const second = { state: 'state-bbbbbbbbbbbbbbbb', nonce: 'n2', codeVerifier: 'v2', returnTo: '/b' };
  const browser = jar([await writeLoginCookie(first, options), await writeLoginCookie(second, options)]);
  t.same(
    Object.keys(browser),
    ['kp_gate_login.state-aaaaaaaaaaaaaaaa', 'kp_gate_login.state-bbbbbbbbbbbbbbbb'],
    'parallel tabs do not clash',
  );
  t.same(await readLoginCookie(browser, first.state, options), first);
  t.same(await readLoginCookie(browser, second.state, options), second);
  t.equal(await readLoginCookie(browser, 'state-cccccccccccccccc', options), null);
  t.equal(
    await readLoginCookie(
      { [`kp_gate_login.${first.state}`]: browser[`kp_gate_login.${second.state}`]! },
      first.state,
      options,
    ),
    null,
    'a cookie for another state',
  );
  t.equal(await readLoginCookie(browser, first.state, { ...options, now: NOW + 601_000 }), null, 'expired');
  t.equal(
    await readSessionCookies({ kp_gate_session: browser[`kp_gate_login.${first.state}`]! }, options),
    null,
    'a login cookie is not a session',
  );
});

t.test('the cookie is a standard compact JWE that jose opens too', async (t) => {
  const [line] = await writeSessionCookies(session, { keys: [keyA], now: NOW, secure: false, ttlSeconds: 60 });
  const value = line!.split(';')[0]!.split('=')[1]!;
  const { payload, protectedHeader } = await jwtDecrypt(value, keyA.key, { currentDate: new Date(NOW) });
  t.match(protectedHeader, { alg: 'dir', enc: 'A256GCM' });
  t.match(payload, { sid: 'sid-1', use: 'session' });
  const [h, , iv, ct, tag] = value.split('.');
  const withKey = `${h}.AAAA.${iv}.${ct}.${tag}`;
  t.equal(
    await readSessionCookies({ kp_gate_session: withKey }, { keys: [keyA], now: NOW, secure: false }),
    null,
    'an encrypted key part is refused (dir only)',
  );
  const zipHeader = Buffer.from(JSON.stringify({ ...protectedHeader, zip: 'DEF' })).toString('base64url');
  t.equal(
    await readSessionCookies(
      { kp_gate_session: `${zipHeader}..${iv}.${ct}.${tag}` },
      { keys: [keyA], now: NOW, secure: false },
    ),
    null,
    'a changed header fails the tag',
  );
});

t.test('parses a Cookie header', async (t) => {
  t.same(parseCookieHeader('a=1; b=2=3;c; a=9'), { a: '1', b: '2=3' });
  t.same(parseCookieHeader(undefined), {});
});
