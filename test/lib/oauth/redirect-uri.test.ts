import t from 'tap';
import { matchRedirectUri, originsOf, validateRedirectUriForRegistration } from '#lib/oauth/redirect-uri.js';

const REGISTERED = [
  'https://app.example.com/callback',
  'https://staging.app.example.com/callback',
  'http://localhost:3000/cb',
];

t.test('matches a registered redirect URI exactly', async (t) => {
  for (const uri of REGISTERED) t.ok(matchRedirectUri(REGISTERED, uri), uri);
});

t.test('refuses every near miss of a registered redirect URI', async (t) => {
  const nearMisses: Record<string, string> = {
    'trailing slash': 'https://app.example.com/callback/',
    'path case': 'https://app.example.com/Callback',
    'host case': 'https://APP.example.com/callback',
    'scheme case': 'HTTPS://app.example.com/callback',
    'extra query': 'https://app.example.com/callback?x=1',
    'empty query': 'https://app.example.com/callback?',
    'other host': 'https://evil.example.com/callback',
    'suffix host': 'https://app.example.com.evil.com/callback',
    fragment: 'https://app.example.com/callback#frag',
    'explicit default port': 'https://app.example.com:443/callback',
    'other port': 'https://app.example.com:8443/callback',
    'loopback other port': 'http://localhost:3001/cb',
    userinfo: 'https://user@app.example.com/callback',
    'http downgrade': 'http://app.example.com/callback',
    'path prefix': 'https://app.example.com/callback/more',
    'dot segment': 'https://app.example.com/x/../callback',
    'percent-encoded': 'https://app.example.com/%63allback',
    empty: '',
  };
  for (const [name, candidate] of Object.entries(nearMisses)) t.notOk(matchRedirectUri(REGISTERED, candidate), name);
  t.notOk(matchRedirectUri(REGISTERED, undefined), 'missing');
  t.notOk(matchRedirectUri(REGISTERED, [REGISTERED[0]]), 'an array');
});

t.test('accepts https and loopback http redirect URIs at registration', async (t) => {
  for (const uri of [
    'https://app.example.com/cb',
    'https://app.example.com/cb?tenant=a',
    'http://localhost:8080/cb',
    'http://127.0.0.1/cb',
    'http://[::1]:9000/cb',
    'https://app.example.com',
  ]) {
    t.equal(validateRedirectUriForRegistration(uri), null, uri);
  }
});

t.test('refuses unsafe redirect URIs at registration', async (t) => {
  const cases: Array<[unknown, string]> = [
    ['http://app.example.com/cb', 'scheme'],
    ['http://localhost.evil.com/cb', 'scheme'],
    ['http://127.0.0.2/cb', 'scheme'],
    ['javascript:alert(1)', 'not_absolute'],
    ['custom.app:/cb', 'not_absolute'],
    ['ftp://app.example.com/cb', 'scheme'],
    ['https://app.example.com/cb#x', 'fragment'],
    ['https://app.example.com/cb#', 'fragment'],
    ['https://*.example.com/cb', 'wildcard'],
    ['https://app.example.com/*', 'wildcard'],
    ['https://user:pw@app.example.com/cb', 'userinfo'],
    ['https://user@app.example.com/cb', 'userinfo'],
    ['/relative/cb', 'not_absolute'],
    ['https:app.example.com/cb', 'not_absolute'],
    ['https://app.example.com/c b', 'whitespace'],
    ['https://app.example.com/cb\n', 'whitespace'],
    [`https://app.example.com/${'a'.repeat(2000)}`, 'too_long'],
    [42, 'not_a_string'],
  ];
  for (const [uri, problem] of cases)
    t.equal(validateRedirectUriForRegistration(uri)?.problem, problem, String(uri).slice(0, 60));
});

t.test('lists the distinct origins of redirect URIs', async (t) => {
  t.same(originsOf([...REGISTERED, 'https://app.example.com/other', 'not a url']), [
    'https://app.example.com',
    'https://staging.app.example.com',
    'http://localhost:3000',
  ]);
});

t.test('a native client may use a loopback IP redirect URI on any port (RFC 8252 §7.3)', async (t) => {
  const registered = ['http://127.0.0.1/callback', 'http://[::1]:8000/cb', 'http://localhost/cb'];
  const any = { loopbackAnyPort: true };
  t.ok(matchRedirectUri(registered, 'http://127.0.0.1:51234/callback', any));
  t.ok(matchRedirectUri(registered, 'http://[::1]:4000/cb', any));
  t.notOk(matchRedirectUri(registered, 'http://127.0.0.1:51234/callback'), 'not without the option');
  t.notOk(matchRedirectUri(registered, 'http://localhost:51234/cb', any), 'localhost is not a loopback IP literal');
  t.notOk(matchRedirectUri(registered, 'http://127.0.0.1:51234/other', any));
  t.notOk(matchRedirectUri(registered, 'http://127.0.0.1:51234/callback?x=1', any));
  t.notOk(matchRedirectUri(registered, 'https://127.0.0.1:51234/callback', any));
  t.notOk(matchRedirectUri(registered, 'http://127.0.0.1:51234/./callback', any), 'a spelling the parser rewrites');
  t.notOk(matchRedirectUri(registered, 'http://127.0.0.1:51234/callback#f', any));
});

t.test('a native client may register a private-use scheme (RFC 8252 §7.1); a web client may not', async (t) => {
  t.equal(validateRedirectUriForRegistration('com.example.app:/callback', { native: true }), null);
  t.not(validateRedirectUriForRegistration('com.example.app:/callback'), null);
  t.not(validateRedirectUriForRegistration('myapp:/callback', { native: true }), null, 'not a reverse domain name');
  t.not(validateRedirectUriForRegistration('com.example.app:/cb#x', { native: true }), null);
  t.not(validateRedirectUriForRegistration('javascript:alert(1)', { native: true }), null);
  t.same(originsOf(['com.example.app:/callback']), [], 'its opaque origin is never listed');
});
