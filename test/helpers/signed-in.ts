import {
  consoleCookieName,
  consoleCookieOptions,
  startConsoleSession,
} from '../../control-plane/src/console/console-session.js';
import type { FastifyInstance } from 'fastify';
import { build, TEST_ISSUER, type Built, type BuildOptions } from './build.js';
import { inPageContext } from '../../control-plane/src/app.js';
import { renewSessionToken } from '../../control-plane/src/sessions/renew-session.js';
import { browserOf, setSessionCookies } from '../../control-plane/src/http/session-cookies.js';
import { openSession } from '../../control-plane/src/sessions/start-session.js';
import { sha256Hex } from '#lib/crypto/sha256.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

export const ORIGIN = new URL(TEST_ISSUER).origin;

/** A browser in tests: keeps cookies (device and session) across requests, sends our Origin on POSTs. */
export class Browser {
  readonly cookies = new Map<string, string>();
  constructor(readonly app: FastifyInstance) {}

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  absorb(setCookie: string | string[] | undefined): void {
    for (const line of [setCookie ?? []].flat()) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attributes.some(
        (a) => /max-age=0\b/i.test(a.trim()) || /expires=thu, 01 jan 1970/i.test(a.trim()),
      );
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async request(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    payload?: unknown,
    headers: Record<string, string> = {},
  ) {
    const res = await this.app.inject({
      method,
      url,
      headers: {
        ...(this.cookies.size ? { cookie: this.header() } : {}),
        ...(method === 'GET' ? {} : { origin: ORIGIN }),
        ...headers,
      },
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    });
    this.absorb(res.headers['set-cookie'] as string | string[] | undefined);
    return res;
  }

  post(url: string, payload: unknown = {}, headers?: Record<string, string>) {
    return this.request('POST', url, payload, headers);
  }

  get(url: string, headers?: Record<string, string>) {
    return this.request('GET', url, undefined, headers);
  }
}

export interface SignInOptions {
  username: string;
  founder?: boolean;
  /** Sign-in level; `sensitive` signs in at `passkey` and records a step-up now. */
  assurance?: 'recovery' | 'email' | 'passkey' | 'sensitive';
  /** Grants this console role and opens a console session (its cookie), as the passkey ceremony would. */
  console?: 'operator' | 'auditor';
  /** Signs in as an upstream sign-in through this connection leaves it (`fed`, and the session marked). */
  upstream?: string;
}

/**
 * Builds a control plane with one extra test-only route that creates an account and signs a
 * browser in through the real `openSession` (the passkey ceremonies have their own suites).
 */
export async function buildSignedIn(
  t: Tap,
  options: BuildOptions = {},
): Promise<Built & { signIn(o: SignInOptions, browser?: Browser): Promise<{ browser: Browser; identityId: string }> }> {
  const built = await build(t, { ...options, skipReady: true });
  const { app, services } = built;
  // A sign-in route sets the session cookie: it sits in the page context, as the real ones do.
  await app.register(
    inPageContext(async (scope) => {
      scope.post('/test/sign-in', async (request, reply) => {
        const body = request.body as Required<SignInOptions>;
        const now = services.now();
        const existing = await services.storage.identities.findByUsername(body.username);
        const identityId = existing?.identityId ?? `usr_${body.username}`;
        return services.storage.transaction(async (tx) => {
          if (!existing) {
            await tx.identities.create({
              identityId,
              username: body.username,
              displayName: '',
              preferences: {},
              founder: body.founder,
              createdAt: now,
              updatedAt: now,
            });
          }
          const level = body.assurance === 'sensitive' ? 'passkey' : body.assurance;
          const opened = await openSession(app.kp, tx, browserOf(app.kp, reply), {
            identityId,
            assurance: level,
            amr: body.upstream ? ['fed'] : level === 'passkey' ? ['pop', 'user'] : ['otp'],
            ...(body.upstream ? { upstream: body.upstream } : {}),
          });
          if (body.upstream) await tx.connections.markSession(opened.sessionId, body.upstream, now);
          const { sessionId } = opened;
          let token = opened.token;
          if (body.assurance === 'sensitive') {
            // A step-up, as completeStepUp records it: a new token that counts as sensitive.
            const renewed = await renewSessionToken(
              app.kp,
              tx,
              { id: sessionId, identityId, tokenHash: sha256Hex(token) },
              { kind: 'step-up', amr: ['pop', 'user'], credId: 'test-cred' },
            );
            token = renewed!.token;
          }
          setSessionCookies(app.kp, reply, token);
          if (body.console) {
            await tx.operators.grant({ identityId, role: body.console, grantedAt: now, grantedBy: null });
            const opened = await startConsoleSession(app.kp, identityId, body.console, now);
            reply.setCookie(consoleCookieName(app.kp), opened.token, consoleCookieOptions(app.kp));
          }
          return { ok: true, identityId, sessionId };
        });
      });
    }),
  );
  await app.ready();
  return {
    ...built,
    async signIn(o, browser = new Browser(app)) {
      const res = await browser.post('/test/sign-in', { founder: false, assurance: 'passkey', ...o });
      if (res.statusCode !== 200) throw new Error(`test sign-in failed: ${res.body}`);
      return { browser, identityId: res.json().identityId as string };
    },
  };
}
