import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';

/**
 * The small server side of the in-place example (deploy/examples/in-place/), mounted by the demo
 * app under `/in-place/`: the static page, its `config.json`, and two checks a relying party's
 * server makes: the code exchange with the PKCE verifier at `/auth/token` (popup and direct
 * grant), and a FedCM ID token with its nonce. Either way the ID token is verified against the
 * JWKS before its claims are shown; tokens never reach the page.
 */

export const IN_PLACE_PREFIX = '/in-place/';
const FILES: Record<string, string> = {
  '': 'text/html; charset=utf-8',
  'index.html': 'text/html; charset=utf-8',
  'in-place.js': 'text/javascript; charset=utf-8',
  'in-place.css': 'text/css; charset=utf-8',
};
const BODY_LIMIT = 16 * 1024;

/** deploy/examples/in-place/ from the source tree or from dist/ (the nearest ancestor that holds it). */
export function findExampleDir(from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'deploy', 'examples', 'in-place');
    if (existsSync(join(candidate, 'index.html'))) return candidate;
    if (dirname(dir) === dir) throw new Error('deploy/examples/in-place/ was not found next to the CLI');
  }
}

export interface InPlaceDemoOptions {
  issuer: string;
  clientId: string;
  /** Where the static files are (default: found from here). */
  dir?: string;
}

export type InPlaceHandler = (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void>;

export function inPlaceDemoHandler(options: InPlaceDemoOptions): InPlaceHandler {
  const dir = options.dir ?? findExampleDir();
  const jwks = createRemoteJWKSet(new URL(`${options.issuer}/.well-known/jwks.json`), { timeoutDuration: 3_000 });
  const csp = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `connect-src 'self' ${options.issuer}`,
    "img-src 'self'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');

  async function verifyIdToken(token: string, nonce?: string): Promise<JWTPayload> {
    const { payload } = await jwtVerify(token, jwks, {
      algorithms: ['ES256'],
      issuer: options.issuer,
      audience: options.clientId,
    });
    if (nonce !== undefined && payload.nonce !== nonce) throw new Error('the ID token carries another nonce');
    return payload;
  }

  return async (req, res, path) => {
    const name = path.slice(IN_PLACE_PREFIX.length);
    if (req.method === 'GET' && name === 'config.json')
      return json(res, 200, { issuer: options.issuer, clientId: options.clientId });
    if (req.method === 'GET' && name === 'callback') {
      // The registered redirect URI: the popup and the direct grant never navigate here.
      return text(
        res,
        200,
        'text/html; charset=utf-8',
        '<!doctype html><html lang="en"><title>Callback</title><p>Nothing to see: <a href="./">back to the example</a>.</p></html>',
        csp,
      );
    }
    if (req.method === 'GET' && FILES[name] !== undefined) {
      return text(res, 200, FILES[name]!, await readFile(join(dir, name === '' ? 'index.html' : name), 'utf8'), csp);
    }
    if (req.method === 'POST' && (name === 'token' || name === 'id-token')) {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(await readBody(req)) as Record<string, unknown>;
      } catch {
        return json(res, 400, { ok: false, reason: 'invalid_request', message: 'send a JSON body of at most 16 KB' });
      }
      try {
        if (name === 'id-token') {
          if (typeof body.token !== 'string' || typeof body.nonce !== 'string')
            return json(res, 400, { ok: false, reason: 'invalid_request', message: 'token and nonce are needed' });
          return json(res, 200, { ok: true, claims: await verifyIdToken(body.token, body.nonce) });
        }
        const { code, code_verifier: verifier, redirect_uri: redirectUri } = body;
        if (typeof code !== 'string' || typeof verifier !== 'string' || typeof redirectUri !== 'string') {
          return json(res, 400, {
            ok: false,
            reason: 'invalid_request',
            message: 'code, code_verifier and redirect_uri are needed',
          });
        }
        const answer = await fetch(`${options.issuer}/auth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            client_id: options.clientId,
            code,
            code_verifier: verifier,
            redirect_uri: redirectUri,
          }),
          signal: AbortSignal.timeout(5_000),
        });
        const tokens = (await answer.json()) as Record<string, unknown>;
        if (!answer.ok || typeof tokens.id_token !== 'string')
          return json(res, 400, {
            ok: false,
            reason: String(tokens.error ?? tokens.reason ?? 'invalid_grant'),
            message: String(tokens.error_description ?? tokens.message ?? ''),
          });
        return json(res, 200, { ok: true, claims: await verifyIdToken(tokens.id_token) });
      } catch (error) {
        return json(res, 400, { ok: false, reason: 'invalid_token', message: (error as Error).message });
      }
    }
    return json(res, 404, { ok: false, reason: 'not_found' });
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > BODY_LIMIT) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  text(res, status, 'application/json', JSON.stringify(body), "default-src 'none'; frame-ancestors 'none'");
}

function text(res: ServerResponse, status: number, type: string, body: string, csp: string): void {
  res.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
  });
  res.end(body);
}
