import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { SoftAuthenticator } from './soft-authenticator.js';
import { TEST_ISSUER } from './build.js';

/**
 * Signs up and signs in through the real HTTP routes with a software authenticator, for tests of
 * any area that needs a signed-in account. `headers` carries the cookies and the Origin that
 * signed-in state-changing requests need.
 */
export interface TestAccount {
  identityId: string;
  username: string;
  authenticator: SoftAuthenticator;
  /** name -> value of the cookies the browser holds (session and device). */
  cookies: Record<string, string>;
  headers: { cookie: string; origin: string };
}

/** Collects Set-Cookie headers into `jar` (an expired cookie is removed). */
export function absorbCookies(res: LightMyRequestResponse, jar: Record<string, string> = {}): Record<string, string> {
  for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number; expires?: Date }>) {
    const expired = c.maxAge === 0 || (c.expires !== undefined && c.expires.getTime() <= Date.now()) || c.value === '';
    if (expired) delete jar[c.name];
    else jar[c.name] = c.value;
  }
  return jar;
}

export function cookieHeader(jar: Record<string, string>): string {
  return Object.entries(jar)
    .map(([k, v]) => `${k}=${v}`)
    .join('; ');
}

export function headersFor(jar: Record<string, string>): { cookie: string; origin: string } {
  return { cookie: cookieHeader(jar), origin: TEST_ISSUER };
}

export async function signUp(
  app: FastifyInstance,
  username: string,
  options: {
    authenticator?: SoftAuthenticator;
    setupToken?: string;
    displayName?: string;
    cookies?: Record<string, string>;
  } = {},
): Promise<TestAccount> {
  const authenticator = options.authenticator ?? new SoftAuthenticator(TEST_ISSUER);
  const jar = { ...(options.cookies ?? {}) };
  const begin = await app.inject({
    method: 'POST',
    url: '/auth/registration-options',
    headers: headersFor(jar),
    payload: {
      username,
      ...(options.setupToken ? { setupToken: options.setupToken } : {}),
      ...(options.displayName ? { displayName: options.displayName } : {}),
    },
  });
  if (begin.statusCode !== 200) throw new Error(`registration-options: ${begin.body}`);
  const { options: creation, signupToken } = begin.json();
  const response = authenticator.create(creation);
  const done = await app.inject({
    method: 'POST',
    url: '/auth/registration-verify',
    headers: headersFor(jar),
    payload: { user: username, response, signupToken },
  });
  if (done.statusCode !== 200) throw new Error(`registration-verify: ${done.body}`);
  absorbCookies(done, jar);
  return { identityId: done.json().identityId, username, authenticator, cookies: jar, headers: headersFor(jar) };
}

/** A fresh sign-in with the account's passkey (usernameless unless `user` is given); returns the new cookie jar. */
export async function signIn(
  app: FastifyInstance,
  account: TestAccount,
  options: { user?: string; cookies?: Record<string, string> } = {},
): Promise<Record<string, string>> {
  const jar = { ...(options.cookies ?? {}) };
  const begin = await app.inject({
    method: 'GET',
    url: `/auth/assertion-options${options.user ? `?user=${encodeURIComponent(options.user)}` : ''}`,
  });
  const response = account.authenticator.get(begin.json().options);
  const done = await app.inject({
    method: 'POST',
    url: '/auth/assertion-verify',
    headers: headersFor(jar),
    payload: { ...(options.user ? { user: options.user } : {}), response },
  });
  if (done.statusCode !== 200) throw new Error(`assertion-verify: ${done.body}`);
  return absorbCookies(done, jar);
}

/**
 * Steps the session in `jar` up to `sensitive`. The step-up renews the session's token, so the
 * new cookie goes into `jar` (and into `account.headers` when `jar` is the account's own), as a
 * browser would keep it.
 */
export async function stepUp(
  app: FastifyInstance,
  account: TestAccount,
  jar: Record<string, string>,
): Promise<LightMyRequestResponse> {
  const begin = await app.inject({ method: 'POST', url: '/auth/step-up/options', headers: headersFor(jar) });
  if (begin.statusCode !== 200) throw new Error(`step-up/options: ${begin.body}`);
  const response = account.authenticator.get(begin.json().options);
  const done = await app.inject({
    method: 'POST',
    url: '/auth/step-up/verify',
    headers: headersFor(jar),
    payload: { response },
  });
  if (done.statusCode === 200) {
    absorbCookies(done, jar);
    if (jar === account.cookies) account.headers.cookie = cookieHeader(jar);
  }
  return done;
}

/** The founder setup token logged at start (from the build helper's captured logs). */
export function setupTokenFrom(logs: string[]): string {
  for (const line of logs) {
    const match = /auth\?setup=([A-Za-z0-9_-]+)/.exec(line);
    if (match) return match[1]!;
  }
  throw new Error('no setup link was logged');
}
