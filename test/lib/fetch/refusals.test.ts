import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import t from 'tap';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { checkFetchTarget, fetchGuarded } from '#lib/fetch/guarded-fetch.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';

// With the default options nothing but https to public addresses is fetched.
const tls = makeTestCa(t);

async function refusal(promise: Promise<unknown>): Promise<{ reason: string; addressClass?: unknown }> {
  try {
    await promise;
  } catch (error) {
    if (isKeyplaneError(error))
      return {
        reason: error.reason,
        ...(error.fields.addressClass ? { addressClass: error.fields.addressClass } : {}),
      };
    return { reason: `not a KeyplaneError: ${String(error)}` };
  }
  return { reason: 'no refusal' };
}

/** A TCP listener on loopback that counts the connections it is offered. */
async function listener(t: { teardown(fn: () => unknown): void }, host = '127.0.0.1') {
  const seen = { connections: 0 };
  const server = createTcpServer((socket) => {
    seen.connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, seen };
}

t.test('refuses loopback, private, link-local and metadata targets without connecting', async (t) => {
  const local = await listener(t);
  const local6 = await listener(t, '::1');
  const cases: Record<string, string> = {
    [`https://127.0.0.1:${local.port}/internal-admin`]: 'loopback',
    [`https://localhost:${local.port}/internal-admin`]: 'loopback',
    [`https://[::1]:${local6.port}/`]: 'loopback',
    [`https://[::ffff:127.0.0.1]:${local.port}/`]: 'loopback',
    [`https://2130706433:${local.port}/`]: 'loopback',
    [`https://0x7f.1:${local.port}/`]: 'loopback',
    'https://10.0.0.1/': 'private',
    'https://192.168.0.10/': 'private',
    'https://169.254.169.254/latest/meta-data/': 'metadata',
    'https://[64:ff9b::a9fe:a9fe]/': 'metadata',
    'https://[fe80::1]/': 'link_local',
    'https://[fd00::1]/': 'private',
    'https://100.64.0.1/': 'shared',
    'https://0.0.0.0/': 'unspecified',
    'https://224.0.0.1/': 'multicast',
  };
  for (const [url, addressClass] of Object.entries(cases)) {
    t.same(await refusal(fetchGuarded(url)), { reason: 'fetch_private_address', addressClass }, url);
    t.same(
      await refusal(checkFetchTarget(url)),
      { reason: 'fetch_private_address', addressClass },
      `${url} (check only)`,
    );
  }
  t.equal(local.seen.connections, 0);
  t.equal(local6.seen.connections, 0);
});

t.test('refuses a host name that resolves to loopback, or to any private address among public ones', async (t) => {
  const local = await listener(t);
  const toLoopback = async () => [{ address: '127.0.0.1', family: 4 as const }];
  t.same(await refusal(fetchGuarded(`https://keys.example.com:${local.port}/`, { resolver: toLoopback })), {
    reason: 'fetch_private_address',
    addressClass: 'loopback',
  });
  const mixed = async () => [
    { address: '93.184.215.14', family: 4 as const },
    { address: '10.0.0.7', family: 4 as const },
  ];
  t.same(await refusal(fetchGuarded('https://keys.example.com/', { resolver: mixed })), {
    reason: 'fetch_private_address',
    addressClass: 'private',
  });
  const mapped = async () => [{ address: '::ffff:169.254.169.254', family: 6 as const }];
  t.same(await refusal(fetchGuarded('https://keys.example.com/', { resolver: mapped })), {
    reason: 'fetch_private_address',
    addressClass: 'metadata',
  });
  t.equal(local.seen.connections, 0);
});

t.test('refuses a redirect to a private address, checked again on that hop', async (t) => {
  const other = await listener(t);
  const server = await startHttpsServer(t, tls, (req, res) => {
    const targets: Record<string, string> = {
      '/to-ip': `https://127.0.0.2:${other.port}/internal-admin`,
      '/to-name': `https://internal.example.com:${other.port}/`,
      '/to-metadata': 'https://169.254.169.254/latest/meta-data/',
    };
    res.writeHead(302, { location: targets[req.url!]! }).end();
  });
  // Only the first hop's own address is let through (an internal key server would be listed likewise).
  const resolver = async (host: string) => [
    { address: host === 'localhost' ? '127.0.0.1' : '127.0.0.3', family: 4 as const },
  ];
  const options = { ca: tls.ca, allowAddresses: ['127.0.0.1'], resolver };
  t.same(await refusal(fetchGuarded(`${server.origin}/to-ip`, options)), {
    reason: 'fetch_private_address',
    addressClass: 'loopback',
  });
  t.same(await refusal(fetchGuarded(`${server.origin}/to-name`, options)), {
    reason: 'fetch_private_address',
    addressClass: 'loopback',
  });
  t.same(await refusal(fetchGuarded(`${server.origin}/to-metadata`, options)), {
    reason: 'fetch_private_address',
    addressClass: 'metadata',
  });
  t.same(server.requests, ['GET /to-ip', 'GET /to-name', 'GET /to-metadata']);
  t.equal(other.seen.connections, 0);
});

t.test('refuses plain http, URLs with credentials and non-URLs', async (t) => {
  const local = await listener(t);
  t.same(await refusal(fetchGuarded(`http://127.0.0.1:${local.port}/internal-admin?probe=1`)), {
    reason: 'fetch_not_https',
  });
  t.same(await refusal(fetchGuarded('http://keys.example.com/jwks')), { reason: 'fetch_not_https' });
  t.same(await refusal(fetchGuarded('ftp://keys.example.com/jwks')), { reason: 'fetch_not_https' });
  t.same(await refusal(fetchGuarded('https://user:secret@keys.example.com/jwks')), {
    reason: 'fetch_credentials_in_url',
  });
  t.same(await refusal(fetchGuarded('https://token@keys.example.com/jwks')), { reason: 'fetch_credentials_in_url' });
  t.same(await refusal(fetchGuarded('/jwks')), { reason: 'fetch_invalid_url' });
  t.equal(local.seen.connections, 0);
});

t.test('cuts off a body larger than the cap, declared or streamed', async (t) => {
  const server = await startHttpsServer(t, tls, (req, res) => {
    if (req.url === '/declared') res.writeHead(200, { 'content-length': '5000' }).end('x'.repeat(5000));
    else {
      res.writeHead(200);
      const chunk = 'y'.repeat(1024);
      let sent = 0;
      const pump = () => {
        while (sent < 160 && res.write(chunk)) sent += 1;
        if (sent < 160) res.once('drain', pump);
        else res.end();
      };
      pump();
    }
  });
  const options = { ca: tls.ca, allowPrivateTargets: true, maxBytes: 1000 };
  t.same(await refusal(fetchGuarded(`${server.origin}/declared`, options)), { reason: 'fetch_too_large' });
  t.same(await refusal(fetchGuarded(`${server.origin}/streamed`, options)), { reason: 'fetch_too_large' });
  t.same(
    await refusal(fetchGuarded(`${server.origin}/streamed`, { ca: tls.ca, allowPrivateTargets: true })),
    { reason: 'fetch_too_large' },
    'the default cap is 128 KiB',
  );
});

t.test('gives up on a server that does not answer, or answers too slowly, by the deadline', async (t) => {
  const server = await startHttpsServer(t, tls, (req, res) => {
    if (req.url === '/dribble') {
      res.writeHead(200);
      res.write('{');
      // never ends
    }
    // '/silent' never answers at all
  });
  const options = { ca: tls.ca, allowPrivateTargets: true, timeoutMs: 200 };
  t.same(await refusal(fetchGuarded(`${server.origin}/silent`, options)), { reason: 'fetch_timeout' });
  t.same(await refusal(fetchGuarded(`${server.origin}/dribble`, options)), { reason: 'fetch_timeout' });
  const slowResolver = () => new Promise<never>(() => undefined);
  t.same(await refusal(fetchGuarded('https://slow-dns.example.com/', { resolver: slowResolver, timeoutMs: 100 })), {
    reason: 'fetch_timeout',
  });
});

t.test('a server that closes mid-body is a failed fetch', async (t) => {
  const server = await startHttpsServer(t, tls, (_req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('{"partial":');
    setImmediate(() => res.socket?.destroy());
  });
  t.same(await refusal(fetchGuarded(server.origin, { ca: tls.ca, allowPrivateTargets: true })), {
    reason: 'fetch_failed',
  });
});
