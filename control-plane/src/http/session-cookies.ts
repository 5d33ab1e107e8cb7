import type { FastifyReply, FastifyRequest } from 'fastify';
import { keptUserAgent } from '#lib/accounts/user-agent.js';
import { randomToken } from '#lib/crypto/random.js';
import type { SessionView } from '../context.js';
import {
  type CookieServices,
  cookieOptions,
  DEVICE_COOKIE_MAX_AGE,
  deviceCookieName,
  deviceIdFromToken,
  fedcmCookieName,
  fedcmCookieOptions,
  sessionCookieName,
  wellFormedToken,
} from '../sessions/cookies.js';
import type { PresentedSession } from '../sessions/renew-session.js';
import type { SignInBrowser } from '../sessions/start-session.js';

// The HTTP side of sessions and devices: reading and writing their cookies on a request. The
// session operations (sessions/) take what these read as plain values and never see fastify.

/** The device id of this browser, from its device cookie; undefined when it has none. */
export function currentDeviceId(kp: CookieServices, request: FastifyRequest): string | undefined {
  const token = request.cookies?.[deviceCookieName(kp)];
  return wellFormedToken(token) ? deviceIdFromToken(token) : undefined;
}

/** The device id of this browser, minting a device cookie on the reply when it has none. */
export function ensureDeviceId(kp: CookieServices, request: FastifyRequest, reply: FastifyReply): string {
  const existing = currentDeviceId(kp, request);
  if (existing) return existing;
  const token = randomToken(32);
  reply.setCookie(deviceCookieName(kp), token, cookieOptions(kp, DEVICE_COOKIE_MAX_AGE));
  // Later reads in this request see the new device.
  (request.cookies as Record<string, string>)[deviceCookieName(kp)] = token;
  return deviceIdFromToken(token);
}

/**
 * The session this request presented, with the hash of its cookie (what a renewal replaces);
 * undefined without a live session.
 */
export function presentedSession(request: FastifyRequest): (SessionView & PresentedSession) | undefined {
  const { session, sessionTokenHash } = request.kp;
  return session && sessionTokenHash !== undefined ? { ...session, tokenHash: sessionTokenHash } : undefined;
}

/** The browser of this request: its device cookie (minted on the reply when missing) and its current session. */
export function browserOf(kp: CookieServices, reply: FastifyReply): SignInBrowser {
  const request = reply.request;
  return {
    deviceId: () => ensureDeviceId(kp, request, reply),
    previous: presentedSession(request),
    userAgent: keptUserAgent(request.headers['user-agent']),
  };
}

/** Sets the session cookie (and its FedCM twin) for a session `openSession` created or a renewal gave a new token. */
export function setSessionCookies(kp: CookieServices, reply: FastifyReply, token: string): void {
  const { lifetimes } = kp.config;
  reply.setCookie(sessionCookieName(kp), token, cookieOptions(kp, lifetimes.sessionAbsolute));
  reply.setCookie(fedcmCookieName(kp), token, fedcmCookieOptions(lifetimes.sessionAbsolute));
  // Login Status API (https://w3c-fedid.github.io/login-status/): FedCM asks for accounts only while logged in.
  reply.header('set-login', 'logged-in');
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
