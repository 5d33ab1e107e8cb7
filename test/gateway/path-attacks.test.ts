import t from 'tap';
import { rawHttp, startTestGateway, startUpstream } from './helpers.js';

const POLICY = {
  mode: 'enforce' as const,
  routes: [
    { path: '/', min_assurance: 'passkey' as const },
    { path: '/admin', min_assurance: 'sensitive' as const },
  ],
};

/** Sends a target as typed (no client-side normalisation) and returns the status line and body. */
async function send(url: string, target: string, cookie: string): Promise<{ status: number; body: string }> {
  const raw = await rawHttp(
    url,
    `GET ${target} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\nCookie: ${cookie}\r\nConnection: close\r\n\r\n`,
  );
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]), body: raw.slice(raw.indexOf('\r\n\r\n') + 4) };
}

t.test('a passkey session never reaches /admin through another spelling of it', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: POLICY });
  const cookie = await gw.sessionCookie({ assurance: 'passkey' });
  t.equal((await send(gw.url, '/app', cookie)).status, 200, 'the session passes where passkey suffices');
  for (const target of ['/Admin', '/ADMIN/users', '/aDmIn', '//admin', '/%61dmin', '/Admin//users']) {
    const answer = await send(gw.url, target, cookie);
    t.equal(answer.status, 403, `${target} falls under /admin`);
    t.match(answer.body, /"reason":"insufficient_assurance"/);
  }
  for (const target of [
    '/admin;x',
    '/admin;jsessionid=1/users',
    '/app/..;/admin',
    '/admin%3b',
    '/app%2f..%2fadmin',
    '/app%5c..%5cadmin',
    '/app\\..\\admin',
    '/app/%2e%2e/admin',
    '/admin%252f',
    '/%c0%ae%c0%ae/admin',
    '/%ef%bc%a1dmin',
    '/admin.',
    '/admin%20',
    '/admin%09',
  ]) {
    const answer = await send(gw.url, target, cookie);
    t.equal(answer.status, 400, `${target} is refused`);
    t.match(answer.body, /"reason":"invalid_path"/);
  }
  t.notOk(
    upstream.seen.some((seen) => /admin/i.test(seen.url)),
    'no spelling of /admin reached the upstream',
  );
  const sensitive = await gw.sessionCookie({ assurance: 'sensitive' });
  t.equal((await send(gw.url, '/ADMIN/users', sensitive)).status, 200, 'a step-up session passes in any case');
  t.equal(upstream.last().url, '/ADMIN/users', 'the upstream gets the path as sent');
});

t.test(
  'a request with more than one Host, Authorization or DPoP header is 400 and never reaches the upstream',
  async (t) => {
    const upstream = await startUpstream(t);
    const gw = await startTestGateway(t, { upstream: upstream.url, policy: POLICY });
    const cookie = await gw.sessionCookie({ assurance: 'sensitive' });
    const head = (fields: string) =>
      `GET /app HTTP/1.1\r\n${fields}Accept: application/json\r\nCookie: ${cookie}\r\nConnection: close\r\n\r\n`;
    const ok = await rawHttp(gw.url, head('Host: localhost\r\n'));
    t.match(ok, /^HTTP\/1\.1 200/, 'one Host passes');
    const seenBefore = upstream.seen.length;
    // RFC 9112 §3.2; node keeps the first Host, a proxy in front or the app behind may read the last.
    for (const fields of [
      'Host: localhost\r\nHost: admin.internal\r\n',
      'Host: localhost\r\nhost: localhost\r\n',
      'Host: localhost\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n',
      'Host: localhost\r\nDPoP: a\r\nDpop: b\r\n',
    ]) {
      const answer = await rawHttp(gw.url, head(fields));
      t.match(answer, /^HTTP\/1\.1 400 /, JSON.stringify(fields));
      t.match(answer, /"reason":"invalid_request"/);
      t.match(answer, /more than one (host|authorization|dpop) header/);
    }
    const upgrade = await rawHttp(
      gw.url,
      `GET /ws HTTP/1.1\r\nHost: localhost\r\nHost: evil\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nCookie: ${cookie}\r\n\r\n`,
    );
    t.match(upgrade, /^HTTP\/1\.1 400 /, 'an upgrade with two Hosts is refused too');
    t.equal(upstream.seen.length, seenBefore, 'none of them reached the upstream');
  },
);
