import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startHttpsServer, type TestCa, type TestHttpsServer } from '../../helpers/tls.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

export const HARDENED_HEADERS: Record<string, string | string[]> = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'",
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'set-cookie': 'sessionid=abc; Secure; HttpOnly; SameSite=Strict; Path=/',
};

/** A local https site answering every GET with these headers and body (and 404 for the policy files). */
export async function startSite(
  t: Tap,
  tls: TestCa,
  headers: Record<string, string | string[]>,
  body = '<!doctype html><title>site</title><p>hello</p>',
  extra: (req: IncomingMessage, res: ServerResponse) => boolean = () => false,
): Promise<TestHttpsServer> {
  return startHttpsServer(t, tls, (req, res) => {
    if (extra(req, res)) return;
    if (
      req.url === '/crossdomain.xml' ||
      req.url === '/clientaccesspolicy.xml' ||
      req.url?.startsWith('/.well-known/')
    ) {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.setHeader('content-type', 'text/html; charset=utf-8');
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    if (req.method === 'OPTIONS') {
      res.statusCode = 204;
      res.end();
      return;
    }
    res.end(body);
  });
}

/** A plain-http server on 127.0.0.1 answering with `handler`; closed when the test ends. */
export async function startHttpSite(
  t: Tap,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { server, url: `http://localhost:${(server.address() as AddressInfo).port}/` };
}

/** A port nothing listens on (the plain-http leg then finds nothing). */
export async function closedHttpUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://localhost:${port}/`;
}
