import t from 'tap';
import { writeFileSync } from 'node:fs';
import http2, { type ClientHttp2Session } from 'node:http2';
import https from 'node:https';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { runCli, startCli } from '../helpers/cli.js';
import { docCommand } from '../helpers/doc-examples.js';
import { TEST_MASTER_KEY, tempDir } from '../helpers/build.js';
import { makeTestCa, type TestCa } from '../helpers/tls.js';
import { until } from '../helpers/until.js';

// `--tls-cert/--tls-key` on both services (docs/operations.md#tls), as real processes: the control
// plane with two workers speaks HTTP/2 and HTTP/1.1 by ALPN and takes a new certificate on SIGHUP
// without dropping an open connection; the gateway speaks HTTP/1.1 only.
t.setTimeout(600_000);

function writeCertificate(dir: string, ca: TestCa): { cert: string; key: string } {
  const files = { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
  writeFileSync(files.cert, ca.cert);
  writeFileSync(files.key, ca.key, { mode: 0o600 });
  return files;
}

function h2Get(session: ClientHttp2Session, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path });
    let status = 0;
    stream.on('response', (headers) => (status = Number(headers[':status'])));
    stream.on('error', reject);
    stream.resume();
    stream.on('end', () => resolve(status));
  });
}

function h1Get(url: string, ca: string): Promise<{ status: number; alpn: string | false | null }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, agent: false }, (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ status: res.statusCode!, alpn: (res.socket as import('node:tls').TLSSocket).alpnProtocol }),
        );
      })
      .on('error', reject);
  });
}

/** The protocol a TLS client offering both h2 and http/1.1 gets (false: none). */
function negotiated(url: string, ca: string): Promise<string | false> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      { host: hostname, port: Number(port), servername: hostname, ca, ALPNProtocols: ['h2', 'http/1.1'] },
      () => {
        resolve(socket.alpnProtocol ?? false);
        socket.end();
      },
    );
    socket.on('error', reject);
  });
}

t.test(
  'control plane over TLS: HTTP/2 and HTTP/1.1 by ALPN; SIGHUP swaps the certificate, open connections stay',
  async (t) => {
    const dir = tempDir(t);
    const first = makeTestCa(t);
    const second = makeTestCa(t);
    const files = writeCertificate(dir, first);
    // docs/operations.md's command as written; the port, data directory and two workers it leaves
    // to its defaults come from a config file and the environment.
    const config = join(dir, 'keyplane.yaml');
    writeFileSync(config, 'port: 0\n');
    const server = await startCli(
      docCommand(
        'docs/operations.md',
        'keyplane control-plane --tls-cert /etc/keyplane/tls/fullchain.pem --tls-key /etc/keyplane/tls/privkey.pem',
        { '/etc/keyplane/tls/fullchain.pem': files.cert, '/etc/keyplane/tls/privkey.pem': files.key },
      ).args,
      { KEYPLANE_MASTER_KEY: TEST_MASTER_KEY, KEYPLANE_DATA_DIR: dir, KEYPLANE_WORKERS: '2', KEYPLANE_CONFIG: config },
      180_000,
    );
    t.teardown(() => server.stop('SIGKILL'));
    t.match(server.url, /^https:\/\/localhost:\d+$/, 'the listening URL is https');

    const session = http2.connect(server.url, { ca: first.ca });
    t.teardown(() => session.close());
    t.equal(await h2Get(session, '/healthz'), 200, 'HTTP/2 answers');
    t.equal(session.alpnProtocol, 'h2', 'HTTP/2 was chosen by ALPN');
    const h1 = await h1Get(`${server.url}/healthz`, first.ca);
    t.equal(h1.status, 200, 'HTTP/1.1 answers on the same port');
    t.not(h1.alpn, 'h2');
    const discovery = await h1Get(`${server.url}/.well-known/openid-configuration`, first.ca);
    t.equal(discovery.status, 200);

    writeCertificate(dir, second);
    server.child.kill('SIGHUP');
    await until('both workers to serve the new certificate', async () => {
      const answers = await Promise.all(
        Array.from({ length: 4 }, () => h1Get(`${server.url}/healthz`, second.ca).catch(() => null)),
      );
      return answers.every((answer) => answer?.status === 200) || undefined;
    });
    await t.rejects(h1Get(`${server.url}/healthz`, first.ca), 'a new connection no longer gets the old certificate');
    t.equal(await h2Get(session, '/healthz'), 200, 'the HTTP/2 connection opened before SIGHUP still serves');
    t.match(server.stderr(), /SIGHUP: TLS certificate and key reloaded/);

    // A key that does not fit leaves the current certificate in place.
    writeFileSync(files.key, first.key);
    server.child.kill('SIGHUP');
    await until(
      'the refusal to reload',
      async () => /the TLS files were not reloaded/.test(server.stderr()) || undefined,
    );
    t.equal((await h1Get(`${server.url}/healthz`, second.ca)).status, 200, 'the current certificate stays');
    t.equal(await server.stop('SIGTERM'), 0);
  },
);

t.test('gateway over TLS speaks HTTP/1.1 only', async (t) => {
  const dir = tempDir(t);
  const ca = makeTestCa(t);
  const files = writeCertificate(dir, ca);
  const gateway = await startCli(
    [
      'gateway',
      '--port',
      '0',
      '--data',
      dir,
      '--upstream',
      'http://127.0.0.1:9',
      '--client-id',
      'gw_tls',
      '--control-plane',
      'http://127.0.0.1:9',
      '--tls-cert',
      files.cert,
      '--tls-key',
      files.key,
    ],
    { KEYPLANE_GATEWAY_CLIENT_SECRET: 'secret-tls-0123456789' },
    180_000,
  );
  t.teardown(() => gateway.stop('SIGKILL'));
  t.match(gateway.url, /^https:\/\/localhost:\d+$/);
  t.equal(await negotiated(gateway.url, ca.ca), 'http/1.1', 'a client offering h2 and http/1.1 gets http/1.1');
  const answer = await h1Get(`${gateway.url}/healthz`, ca.ca);
  t.equal(answer.status, 200, 'HTTP/1.1 over TLS answers');
  t.equal(await gateway.stop('SIGTERM'), 0);
});

t.test('one TLS file without the other stops the start (exit 2)', async (t) => {
  const dir = tempDir(t);
  const files = writeCertificate(dir, makeTestCa(t));
  const result = await runCli(['control-plane', '--data', dir, '--tls-cert', files.cert]);
  t.equal(result.code, 2);
  t.match(result.stderr, /tls\.key is not set/);
  const unreadable = await runCli(['gateway', '--tls-cert', join(dir, 'missing.pem'), '--tls-key', files.key]);
  t.equal(unreadable.code, 2);
  t.match(unreadable.stderr, /tls\.cert .*missing\.pem cannot be read/);
});
