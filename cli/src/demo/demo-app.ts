import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { escapeHtml } from '#lib/html/escape-html.js';
import { FAVICON_SVG } from '#lib/html/favicon.js';
import { IDENTITY_HEADERS } from '#lib/gateway-protocol/identity-headers.js';
import { listen } from '#lib/runtime/listen.js';
import { IN_PLACE_PREFIX, inPlaceDemoHandler, type InPlaceDemoOptions } from './in-place-page.js';

/**
 * The app `keyplane up` puts behind the gateway: it has no sign-in code at all and shows what the
 * gateway told it, after checking the signed X-Auth-Assertion against the gateway's JWKS, which is
 * exactly what a real app behind the gateway should do.
 */

export interface DemoApp {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Shown on the page; the assertion is checked rather than shown. */
const SHOWN_HEADERS = [
  IDENTITY_HEADERS.subject,
  IDENTITY_HEADERS.principalType,
  IDENTITY_HEADERS.assurance,
  IDENTITY_HEADERS.email,
];

export async function startDemoApp(options: {
  port: number;
  host: string;
  gatewayUrl: string;
  inPlace?: InPlaceDemoOptions;
}): Promise<DemoApp> {
  // The in-place example (deploy/examples/in-place/) is served on the demo app's own origin, not
  // behind the gateway: it signs in by itself, with the three in-place transports.
  const inPlace = options.inPlace ? inPlaceDemoHandler(options.inPlace) : null;
  const jwks = createRemoteJWKSet(new URL(`${options.gatewayUrl}/_gate/jwks`), {
    timeoutDuration: 3_000,
    cooldownDuration: 30_000,
  });
  const server = createServer((req, res) => {
    handle(req, res).catch(() => send(res, 500, 'application/json', JSON.stringify({ ok: false, reason: 'internal' })));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://demo').pathname;
    if (path === '/favicon.ico' || path === '/favicon.svg') return send(res, 200, 'image/svg+xml', FAVICON_SVG);
    if (inPlace && path === IN_PLACE_PREFIX.slice(0, -1)) {
      res.writeHead(308, { location: IN_PLACE_PREFIX });
      return void res.end();
    }
    if (inPlace && path.startsWith(IN_PLACE_PREFIX)) return inPlace(req, res, path);
    const identity = Object.fromEntries(SHOWN_HEADERS.map((name) => [name, headerValue(req, name)]));
    const assertion = await checkAssertion(headerValue(req, IDENTITY_HEADERS.assertion));
    if (path === '/api/whoami' || (req.headers.accept ?? '').startsWith('application/json')) {
      return send(res, 200, 'application/json', JSON.stringify({ ok: true, path, identity, assertion }));
    }
    send(res, 200, 'text/html; charset=utf-8', page(path, identity, assertion, options.gatewayUrl));
  }

  async function checkAssertion(
    token: string | undefined,
  ): Promise<{ verified: boolean; claims?: JWTPayload; problem?: string }> {
    if (!token) return { verified: false, problem: 'no assertion (a public route, or no gateway in front)' };
    try {
      // The gateway addresses its assertion to the upstream origin it proxies to: this app.
      const { payload } = await jwtVerify(token, jwks, {
        algorithms: ['ES256'],
        issuer: options.gatewayUrl,
        audience: url,
      });
      return { verified: true, claims: payload };
    } catch (error) {
      return { verified: false, problem: (error as { code?: string }).code ?? 'does not verify' };
    }
  }

  const port = await listen(server, options.port, options.host);
  const url = `http://${options.host}:${port}`;
  return {
    url,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeIdleConnections();
        server.close(() => resolve());
      }),
  };
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    'content-security-policy':
      "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
  });
  res.end(body);
}

function page(
  path: string,
  identity: Record<string, string | undefined>,
  assertion: { verified: boolean; claims?: JWTPayload; problem?: string },
  gatewayUrl: string,
): string {
  const rows = Object.entries(identity)
    .map(
      ([name, value]) =>
        `<tr><th scope="row"><code>${escapeHtml(name)}</code></th><td id="${escapeHtml(name)}">${value === undefined ? '<em>not sent</em>' : escapeHtml(value)}</td></tr>`,
    )
    .join('');
  const verdict = assertion.verified
    ? `<p id="assertion" class="good">The signed assertion verifies with <code>${escapeHtml(gatewayUrl)}/_gate/jwks</code>.</p>`
    : `<p id="assertion" class="note">Assertion: ${escapeHtml(assertion.problem ?? 'not verified')}.</p>`;
  const claims = assertion.claims
    ? `<details><summary>Assertion claims</summary><pre>${escapeHtml(JSON.stringify(assertion.claims, null, 2))}</pre></details>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Keyplane demo app</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #ddd}
.good{color:#0a6b2d}.note{color:#6b4e0a}nav a{display:inline-block;padding:.25rem 0;margin-right:1rem}pre{overflow:auto;background:#f5f5f5;padding:.5rem}</style>
</head><body><main>
<h1>Keyplane demo app</h1>
<p>This app has no sign-in code. The Keyplane gateway in front of it signed you in and sends who you are in headers. You are on <code id="path">${escapeHtml(path)}</code>.</p>
<table><caption>Identity the gateway sent</caption>${rows}</table>
${verdict}${claims}
<nav aria-label="Demo routes"><a href="/">Home (passkey)</a><a href="/admin">Admin (step-up to sensitive)</a><a href="/public">Public</a><a href="/_gate/signout">Sign out</a></nav>
</main></body></html>`;
}
