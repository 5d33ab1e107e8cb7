import type { FastifyReply } from 'fastify';
import { fail } from '../../../lib/errors/keyplane-error.js';
import { randomId, randomToken } from '../../../lib/util/random.js';
import { sha256Hex } from '../../../lib/util/sha256.js';
import { isAccountActive } from '../accounts/lifecycle.js';
import type { ControlPlaneServices } from '../context.js';
import type { SessionAssurance, Stores } from '../storage/types.js';
import {
  type CookieServices,
  cookieOptions,
  ensureDeviceId,
  fedcmCookieName,
  fedcmCookieOptions,
  sessionCookieName,
} from './cookies.js';
import { endGrantsOfSessions } from '../grants/end-grants.js';

export interface StartSessionInput {
  identityId: string;
  /** Defaults to this browser's device cookie (minted when missing). */
  deviceId?: string;
  /** What the sign-in proved: passkey, recovery code or magic link (email). */
  assurance: SessionAssurance;
  /** RFC 8176 method references, e.g. ['pop', 'user'] for a passkey with user verification. */
  amr: string[];
  /** The passkey used, for passkey sign-ins. */
  credId?: string;
}

const METHOD: Record<SessionAssurance, 'passkey' | 'recovery' | 'email'> = {
  passkey: 'passkey',
  recovery: 'recovery',
  email: 'email',
};

/** What opening a session needs: config (lifetimes), the clock and the event bus. */
export type SessionServices = Pick<ControlPlaneServices, 'config' | 'events' | 'now'>;

/** The browser a sign-in happens in, as operations see it (no cookies, no reply). */
export interface SignInBrowser {
  /** This browser's device id; called only once the sign-in succeeded (mints the device cookie when new). */
  deviceId(): string;
  /** The session this browser had, revoked by the new one. */
  previous?: { id: string; identityId: string } | undefined;
}

export interface OpenedSession {
  sessionId: string;
  /** The cookie value; only its SHA-256 is stored. */
  token: string;
  receipt?: string;
}

/**
 * Creates a session record inside the caller's transaction (with its `session.started` event)
 * and puts the device in the ledger. A session this browser already had is revoked, so a
 * sign-in never leaves two. The caller sets the cookie (`setSessionCookies`).
 */
export async function openSession(
  services: SessionServices,
  tx: Stores,
  browser: SignInBrowser,
  input: StartSessionInput,
): Promise<OpenedSession> {
  const now = services.now();
  const { lifetimes } = services.config;
  const deviceId = input.deviceId ?? browser.deviceId();
  // Every sign-in (passkey, backup code, magic link) ends here, so this one check covers them all.
  if (!(await isAccountActive(tx, input.identityId)))
    throw fail('account_disabled', 'this account is disabled; ask the operator of this server');
  const previous = browser.previous;
  if (previous) {
    await tx.sessions.revoke(previous.identityId, previous.id, now);
    await endGrantsOfSessions(services, tx, [previous.id], now);
  }

  const token = randomToken(32);
  const sessionId = randomId('ses');
  const absoluteExpiresAt = now + lifetimes.sessionAbsolute * 1000;
  await tx.sessions.insert({
    sessionId,
    tokenHash: sha256Hex(token),
    identityId: input.identityId,
    deviceId,
    assurance: input.assurance,
    amr: [...input.amr],
    authTime: now,
    stepUpAt: null,
    credId: input.credId ?? null,
    createdAt: now,
    lastSeenAt: now,
    idleExpiresAt: Math.min(absoluteExpiresAt, now + lifetimes.sessionIdle * 1000),
    absoluteExpiresAt,
    revokedAt: null,
  });
  await tx.devices.upsert(input.identityId, deviceId, now);
  const { receipt } = await services.events.record(tx, {
    type: 'session.started',
    at: now,
    outcome: 'success',
    identityId: input.identityId,
    sessionId,
    deviceId,
    method: METHOD[input.assurance],
    assurance: input.assurance,
  });
  return receipt === undefined ? { sessionId, token } : { sessionId, token, receipt };
}

/** The browser of this request: its device cookie (minted on the reply when missing) and its current session. */
export function browserOf(kp: CookieServices, reply: FastifyReply): SignInBrowser {
  const request = reply.request;
  return { deviceId: () => ensureDeviceId(kp, request, reply), previous: request.kp.session };
}

/** Sets the session cookie (and its FedCM twin) for a session `openSession` created. */
export function setSessionCookies(kp: CookieServices, reply: FastifyReply, token: string): void {
  const { lifetimes } = kp.config;
  reply.setCookie(sessionCookieName(kp), token, cookieOptions(kp, lifetimes.sessionAbsolute));
  reply.setCookie(fedcmCookieName(kp), token, fedcmCookieOptions(lifetimes.sessionAbsolute));
  // Login Status API (https://w3c-fedid.github.io/login-status/): FedCM asks for accounts only while logged in.
  reply.header('set-login', 'logged-in');
}

/** `openSession` for a route: the browser of this reply, and the cookies set on it. */
export async function startSession(
  services: ControlPlaneServices,
  reply: FastifyReply,
  tx: Stores,
  input: StartSessionInput,
): Promise<{ sessionId: string; receipt?: string }> {
  const { token, ...opened } = await openSession(services, tx, browserOf(services, reply), input);
  setSessionCookies(services, reply, token);
  return opened;
}

/** Expires the session cookie on the reply. */
export function clearSessionCookie(kp: CookieServices, reply: FastifyReply): void {
  reply.clearCookie(sessionCookieName(kp), {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: cookieOptions(kp, 0).secure,
  });
  reply.clearCookie(fedcmCookieName(kp), { ...fedcmCookieOptions(0), maxAge: undefined });
  reply.header('set-login', 'logged-out');
}
