import t from 'tap';
import { applyForwardedHeaders } from '#lib/gateway-protocol/forwarded.js';
import { compileAddressList } from '#lib/net/cidr.js';

const trusted = compileAddressList(['10.0.0.0/8']);

t.test('an untrusted peer cannot set any forwarding header, in any spelling', async (t) => {
  const headers: Record<string, string | string[] | undefined> = {
    host: 'evil.example',
    'x-forwarded-for': '1.1.1.1',
    x_forwarded_for: '2.2.2.2',
    'x.forwarded.host': 'evil',
    'x-forwarded-proto': 'https',
    'x-forwarded-uri': '/public',
    'x-original-uri': '/public',
    forwarded: 'for=3.3.3.3',
    'x-real-ip': '4.4.4.4',
    'x-forwarded-prefix': '/admin',
    accept: '*/*',
  };
  const view = applyForwardedHeaders(
    headers,
    { remoteAddress: '203.0.113.5', encrypted: false },
    trusted,
    'https://gate.example.test',
  );
  t.same(
    view,
    { clientIp: '203.0.113.5', proto: 'https', host: 'gate.example.test', forwardedFor: '203.0.113.5', trusted: false },
    "host and proto from the public URL, never the client's Host",
  );
  t.same(headers, {
    host: 'evil.example',
    accept: '*/*',
    'x-forwarded-for': '203.0.113.5',
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'gate.example.test',
  });
});

t.test('a trusted proxy is believed, and its chain extended', async (t) => {
  const headers: Record<string, string | string[] | undefined> = {
    host: 'internal:4480',
    'x-forwarded-for': '198.51.100.7, 10.1.1.1',
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'app.example.test',
    'x-forwarded-method': 'POST',
    'x-forwarded-uri': '/a?b=1,2',
    x_forwarded_host: 'evil',
  };
  const view = applyForwardedHeaders(
    headers,
    { remoteAddress: '::ffff:10.0.0.2', encrypted: false },
    trusted,
    'https://gate.example.test',
  );
  t.match(view, {
    trusted: true,
    proto: 'https',
    host: 'app.example.test',
    clientIp: '10.1.1.1',
    originalMethod: 'POST',
    originalUri: '/a?b=1,2',
  });
  t.equal(headers['x-forwarded-for'], '198.51.100.7, 10.1.1.1, ::ffff:10.0.0.2');
  t.notOk('x_forwarded_host' in headers, 'non-canonical spellings go even from a trusted proxy');
  const odd = applyForwardedHeaders(
    { 'x-forwarded-proto': 'gopher', 'x-forwarded-host': 'a b', 'x-forwarded-method': 'get; x' },
    { remoteAddress: '10.0.0.2', encrypted: true },
    trusted,
    'https://gate.example.test',
  );
  t.match(odd, { proto: 'https', host: 'gate.example.test' }, 'unusable values fall back to the public URL');
  t.notOk(odd.originalMethod);
});
