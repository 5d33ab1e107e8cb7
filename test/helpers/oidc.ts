import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { computeAth } from '#lib/dpop/verify-dpop-proof.js';
import { formatClientSecretBasic } from '#lib/oauth/client-auth.js';
import { TEST_ISSUER } from './build.js';
import type { Browser } from './signed-in.js';

export const ADMIN = 'admin-token-0123456789abcdef0123456789abcdef';
export const REDIRECT = 'https://notes.example.com/callback';
export const RESOURCE = 'https://api.notes.example.com';

export interface Registered {
  client_id: string;
  client_secret?: string;
}

/** Registers a client with the admin token (the build must set `adminToken: ADMIN`). */
export async function registerClient(
  app: FastifyInstance,
  metadata: Record<string, unknown> = {},
): Promise<Registered> {
  const res = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: {
      client_name: 'Notes',
      redirect_uris: [REDIRECT, 'https://staging.notes.example.com/callback'],
      post_logout_redirect_uris: ['https://notes.example.com/'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid email profile offline_access',
      resources: [RESOURCE],
      token_endpoint_auth_method: 'client_secret_basic',
      ...metadata,
    },
  });
  if (res.statusCode !== 201) throw new Error(`register: ${res.body}`);
  return res.json();
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function basicAuth(client: Registered): string {
  return formatClientSecretBasic(client.client_id, client.client_secret ?? '');
}

export function authorizeUrl(params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) query.append(k, v);
  return `/auth/authorize?${query}`;
}

/** Query parameters of a redirect's Location. */
export function redirectParams(res: LightMyRequestResponse): URLSearchParams & { base: string } {
  const location = String(res.headers.location);
  const url = new URL(location, TEST_ISSUER);
  return Object.assign(url.searchParams, { base: `${url.origin}${url.pathname}` });
}

/** The default parameters of a good authorization request for `client`. */
export function goodRequest(
  client: Registered,
  challenge: string,
  extra: Record<string, string | undefined> = {},
): Record<string, string | undefined> {
  return {
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid email profile offline_access',
    state: 'st-123',
    nonce: 'n-456',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  };
}

/**
 * Gets a code through the one-tap page (first time) or at once (approved before): follows the
 * flow a browser would, submitting the form's hidden inputs.
 */
export async function obtainCode(
  browser: Browser,
  params: Record<string, string | undefined>,
): Promise<{ code: string; res: LightMyRequestResponse }> {
  let res = await browser.get(authorizeUrl(params));
  if (res.statusCode === 200 && res.body.includes('data-action="continue"')) {
    const form: Record<string, string> = {};
    for (const match of res.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
      form[match[1]!] = decodeEntities(match[2]!);
    res = await browser.request('POST', '/auth/authorize', new URLSearchParams(form).toString(), {
      'content-type': 'application/x-www-form-urlencoded',
    });
  }
  if (res.statusCode !== 302 && res.statusCode !== 303)
    throw new Error(`authorize did not redirect: ${res.statusCode} ${res.body.slice(0, 300)}`);
  const code = redirectParams(res).get('code');
  if (!code) throw new Error(`no code: ${res.headers.location}`);
  return { code, res };
}

export function decodeEntities(value: string): string {
  return value
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

export async function exchangeCode(
  app: FastifyInstance,
  client: Registered,
  code: string,
  verifier: string,
  headers: Record<string, string> = {},
  extra: Record<string, string> = {},
) {
  return app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      ...extra,
    }).toString(),
  });
}

export async function refresh(
  app: FastifyInstance,
  client: Registered,
  refreshToken: string,
  headers: Record<string, string> = {},
) {
  return app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }).toString(),
  });
}

/** A DPoP key and a proof maker with knobs to break each check. */
export async function dpopKey(): Promise<{
  jkt: string;
  jwk: JWK;
  proof(o: {
    htm?: string;
    htu?: string;
    iat?: number;
    jti?: string;
    accessToken?: string;
    now?: number;
    nonce?: string;
  }): Promise<string>;
}> {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = await exportJWK(publicKey);
  const jkt = await calculateJwkThumbprint(jwk, 'sha256');
  return {
    jkt,
    jwk,
    proof: (o) =>
      new SignJWT({
        htm: o.htm ?? 'POST',
        htu: o.htu ?? `${TEST_ISSUER}/auth/token`,
        jti: o.jti ?? randomBytes(12).toString('base64url'),
        iat: o.iat ?? Math.floor((o.now ?? Date.now()) / 1000),
        ...(o.accessToken ? { ath: computeAth(o.accessToken) } : {}),
        ...(o.nonce ? { nonce: o.nonce } : {}),
      })
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
        .sign(privateKey as CryptoKey),
  };
}
