import type { FastifyInstance, FastifyReply } from 'fastify';
import { fail } from '../../../lib/errors/keyplane-error.js';
import { randomId, randomToken } from '../../../lib/util/random.js';
import { sha256Hex } from '../../../lib/util/sha256.js';
import { isAccountActive } from '../accounts/lifecycle.js';
import type { SessionAssurance, Stores } from '../storage/types.js';
import { cookieOptions, ensureDeviceId, fedcmCookieName, fedcmCookieOptions, sessionCookieName } from './cookies.js';
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

const METHOD: Record<SessionAssurance, 'passkey' | 'recovery' | 'email'> = { passkey: 'passkey', recovery: 'recovery', email: 'email' };

/**
 * Creates a session record inside the caller's transaction (with its `session.started` event),
 * puts the device in the ledger and sets the session cookie. Only the SHA-256 of the cookie value
 * is stored. A session this browser already had is revoked, so a sign-in never leaves two.
 */
export async function startSession(
  app: FastifyInstance,
  reply: FastifyReply,
  tx: Stores,
  input: StartSessionInput,
): Promise<{ sessionId: string; receipt?: string }> {
  const request = reply.request;
  const now = app.kp.now();
  const { lifetimes } = app.kp.config;
  const deviceId = input.deviceId ?? ensureDeviceId(app, request, reply);
  // Every sign-in (passkey, backup code, magic link) ends here, so this one check covers them all.
  if (!(await isAccountActive(tx, input.identityId))) throw fail('account_disabled', 'this account is disabled; ask the operator of this server');
  const previous = request.kp.session;
  if (previous) {
    await tx.sessions.revoke(previous.identityId, previous.id, now);
    await endGrantsOfSessions(app.kp, tx, [previous.id], now);
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
  const { receipt } = await app.kp.events.record(tx, {
    type: 'session.started', at: now, outcome: 'success',
    identityId: input.identityId, sessionId, deviceId, method: METHOD[input.assurance], assurance: input.assurance,
  });
  reply.setCookie(sessionCookieName(app), token, cookieOptions(app, lifetimes.sessionAbsolute));
  reply.setCookie(fedcmCookieName(app), token, fedcmCookieOptions(lifetimes.sessionAbsolute));
  // Login Status API (https://w3c-fedid.github.io/login-status/): FedCM asks for accounts only while logged in.
  reply.header('set-login', 'logged-in');
  return receipt === undefined ? { sessionId } : { sessionId, receipt };
}

/** Expires the session cookie on the reply. */
export function clearSessionCookie(app: FastifyInstance, reply: FastifyReply): void {
  reply.clearCookie(sessionCookieName(app), { path: '/', httpOnly: true, sameSite: 'lax', secure: cookieOptions(app, 0).secure });
  reply.clearCookie(fedcmCookieName(app), { ...fedcmCookieOptions(0), maxAge: undefined });
  reply.header('set-login', 'logged-out');
}
