import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tempDir } from './build.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

export interface TestCa {
  /** PEM of the test CA, to trust in the client. */
  ca: string;
  caFile: string;
  key: string;
  cert: string;
}

/**
 * A throw-away certificate authority and a server certificate it signed for `localhost`,
 * `127.0.0.1`, `::1` and the given extra names, made with the openssl CLI.
 */
export function makeTestCa(t: Tap, names: string[] = []): TestCa {
  const dir = tempDir(t, 'keyplane-ca-');
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=Keyplane test CA',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  openssl(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-subj',
    '/CN=localhost',
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
  );
  const san = ['DNS:localhost', 'IP:127.0.0.1', 'IP:::1', ...names.map((name) => `DNS:${name}`)].join(',');
  writeFileSync(file('ext.cnf'), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
  openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-out',
    file('server.pem'),
    '-extfile',
    file('ext.cnf'),
  );
  return {
    ca: readFileSync(file('ca.pem'), 'utf8'),
    caFile: file('ca.pem'),
    key: readFileSync(file('server.key'), 'utf8'),
    cert: readFileSync(file('server.pem'), 'utf8'),
  };
}

export interface TestHttpsServer {
  server: Server;
  port: number;
  /** `https://localhost:<port>` */
  origin: string;
  /** Every request the server received, as `METHOD path`. */
  requests: string[];
}

/** An https server on 127.0.0.1 with the test CA's certificate; closed when the test ends. */
export async function startHttpsServer(
  t: Tap,
  tls: TestCa,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<TestHttpsServer> {
  const requests: string[] = [];
  const server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    requests.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { server, port, origin: `https://localhost:${port}`, requests };
}
