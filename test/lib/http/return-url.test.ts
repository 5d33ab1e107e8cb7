import t from 'tap';
import { validateReturnUrl } from '#lib/http/return-url.js';

const ORIGIN = 'https://gate.example.test';

t.test('accepts paths on the gateway origin', async (t) => {
  t.equal(validateReturnUrl('/', ORIGIN), '/');
  t.equal(validateReturnUrl('/app/page?x=1#frag', ORIGIN), '/app/page?x=1#frag');
  t.equal(validateReturnUrl('https://gate.example.test/deep/path', ORIGIN), '/deep/path');
  t.equal(validateReturnUrl('/a/../b', ORIGIN), '/b', 'dot segments are resolved');
});

t.test('refuses the usual open-redirect attempts', async (t) => {
  const attempts = [
    '//evil.example',
    '///evil.example',
    '/\\evil.example',
    '\\\\evil.example',
    '/\\/evil.example',
    'https://evil.example/',
    'http://gate.example.test/',
    'https://gate.example.test.evil.example/',
    'https://gate.example.test@evil.example/',
    'https://user:pw@gate.example.test/',
    'javascript:alert(1)',
    'data:text/html,x',
    'evil.example',
    '',
    '/%5cevil.example',
    '/%5Cevil.example',
    '/\tevil',
    ' /path',
    '/path\n',
    '/pa\u0000th',
    '/\u2028x',
    '%2f%2fevil.example',
    '/%09/evil.example',
    '/%0d%0aSet-Cookie:x',
    'https:evil.example',
    '//gate.example.test/x',
    `/${'a'.repeat(3000)}`,
  ];
  for (const attempt of attempts) t.equal(validateReturnUrl(attempt, ORIGIN), null, encodeURI(attempt).slice(0, 60));
  t.equal(validateReturnUrl(42, ORIGIN), null);
  t.equal(validateReturnUrl(undefined, ORIGIN), null);
});
