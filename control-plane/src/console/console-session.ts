import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { fail } from '#lib/errors/keyplane-error.js';
import type { ConsoleSessionView, ControlPlaneServices } from '../context.js';
import type { OperatorRole } from '../storage/interface.js';
import { readAssertion, requestOptions, takeChallenge, verifyAssertion } from '../passkeys/ceremony.js';
import { type CookieServices, isHttpsIssuer, wellFormedToken } from '../sessions/cookies.js';
import { isAccountActive, requireSignInAllowed } from '../accounts/lifecycle.js';

/**
 * The console's own session (docs/console.md#the-console-session): opened only by a fresh passkey
 * ceremony at /console, never by the everyday session or a federated sign-in; idle 30 minutes, 12
 * hours at most. It lives in shared state under the SHA-256 of its cookie, so every replica and
 * worker sees it and the cookie value is never stored.
 */
export const CONSOLE_IDLE_MS = 30 * 60_000;
export const CONSOLE_MAX_MS = 12 * 3600_000;

export type ConsoleServices = Pick<ControlPlaneServices, 'config' | 'state' | 'storage' | 'events' | 'now'>;

export type { ConsoleSessionView };

interface StoredConsoleSession {
  identityId: string;
  openedAt: number;
}

const keyOf = (id: string) => `console:session:${id}`;

export function consoleCookieName(kp: CookieServices): string {
  return isHttpsIssuer(kp) ? '__Host-kp_console' : 'kp_console';
}

/** `SameSite=Strict`: no other site's link or form ever arrives with it; a browser-session cookie ended by the server's clock. */
export function consoleCookieOptions(kp: CookieServices) {
  return { httpOnly: true, sameSite: 'strict' as const, secure: isHttpsIssuer(kp), path: '/' };
}

/** Step 1: usernameless request options, for this purpose only (a sign-in challenge cannot open the console). */
export async function beginConsoleCeremony(services: ConsoleServices): Promise<PublicKeyCredentialRequestOptionsJSON> {
  return requestOptions(services, null, { purpose: 'console' });
}

/**
 * Step 2: the passkey must belong to an active account holding a console role; then a new console
 * session opens (`console.opened`). Accounts without a role are refused (403) and get no cookie.
 */
export async function finishConsoleCeremony(
  services: ConsoleServices,
  response: unknown,
): Promise<{ token: string; session: ConsoleSessionView; receipt?: string }> {
  const { id, clientData, fields, userHandle } = await readAssertion(response);
  await takeChallenge(services, clientData, 'console');
  const credential = await services.storage.credentials.get(id);
  if (!credential || (userHandle !== undefined && userHandle !== credential.identityId))
    throw fail('unknown_credential', 'this passkey is not registered here');
  const use = await verifyAssertion(services, response, clientData, fields, credential);
  const now = services.now();
  await requireSignInAllowed(services.storage, credential.identityId);
  const role = await services.storage.operators.roleOf(credential.identityId);
  if (!role) throw fail('forbidden', 'this account is neither an operator nor an auditor');
  const { token, session } = await startConsoleSession(services, credential.identityId, role, now);
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.credentials.recordUse(credential.credId, { ...use, at: now });
    return services.events.record(tx, {
      type: 'console.opened',
      at: now,
      outcome: 'success',
      actor: { type: 'person', id: credential.identityId },
      identityId: credential.identityId,
      role,
    });
  });
  return { token, session, ...(receipt ? { receipt } : {}) };
}

/** Stores a new console session for an account the caller checked; returns its cookie value. */
export async function startConsoleSession(
  services: Pick<ConsoleServices, 'state'>,
  identityId: string,
  role: OperatorRole,
  now: number,
): Promise<{ token: string; session: ConsoleSessionView }> {
  const token = randomToken(32);
  const id = sha256Hex(token);
  const stored: StoredConsoleSession = { identityId, openedAt: now };
  await services.state.set(keyOf(id), JSON.stringify(stored), CONSOLE_IDLE_MS);
  return { token, session: { id, identityId, role, openedAt: now } };
}

/**
 * The live console session a cookie names, or null: unknown, idle past 30 minutes, older than 12
 * hours, or its account lost its role or was disabled (checked on every request, so a revoke
 * takes effect at once). Each use restarts the idle clock.
 */
export async function lookUpConsoleSession(
  services: ConsoleServices,
  token: string | undefined,
): Promise<ConsoleSessionView | null> {
  if (!wellFormedToken(token)) return null;
  const id = sha256Hex(token);
  const raw = await services.state.get(keyOf(id));
  if (raw === null) return null;
  const stored = JSON.parse(raw) as StoredConsoleSession;
  const left = stored.openedAt + CONSOLE_MAX_MS - services.now();
  const role = await services.storage.operators.roleOf(stored.identityId);
  if (left <= 0 || !role || !(await isAccountActive(services.storage, stored.identityId))) {
    await services.state.del(keyOf(id));
    return null;
  }
  await services.state.set(keyOf(id), raw, Math.min(CONSOLE_IDLE_MS, left));
  return { id, identityId: stored.identityId, role, openedAt: stored.openedAt };
}

export async function endConsoleSession(services: ConsoleServices, session: ConsoleSessionView): Promise<void> {
  await services.state.del(keyOf(session.id));
}
