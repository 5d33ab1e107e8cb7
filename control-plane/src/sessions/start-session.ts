import { randomId, randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { fail } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices } from '../context.js';
import { refuseOwnMethod, requiredSsoFor, upstreamDeadline } from '../federation/required-sso.js';
import type { SessionAssurance, Stores } from '../storage/interface.js';
import { requireSignInAllowed } from '../accounts/lifecycle.js';
import { endSessionIn } from './end-session.js';
import { type PresentedSession, renewSessionToken } from './renew-session.js';

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
  /**
   * A magic link's rule (docs/accounts.md#magic-links): a session of this account that proved at
   * least `assurance` keeps its state and only gets a new token, rather than being set to it.
   */
  keepStrongerSession?: boolean;
  /** The connection an upstream (federated) sign-in came through. */
  upstream?: string;
}

const METHOD: Record<SessionAssurance, 'passkey' | 'recovery' | 'email'> = {
  passkey: 'passkey',
  recovery: 'recovery',
  email: 'email',
};

/** What opening a session needs: config (lifetimes), the clock, the event bus and shared state (renewals). */
export type SessionServices = Pick<ControlPlaneServices, 'config' | 'events' | 'state' | 'now'>;

/** The browser a sign-in happens in, as operations see it (no cookies, no reply). */
export interface SignInBrowser {
  /** This browser's device id; called only once the sign-in succeeded (mints the device cookie when new). */
  deviceId(): string;
  /**
   * The session this browser had: renewed under a new token when the sign-in is to the same
   * account, ended when it is to another.
   */
  previous?: PresentedSession | undefined;
  /** Its User-Agent, kept on the device so the account page can name it ("Chrome 139 on macOS"). */
  userAgent?: string | null;
}

export interface OpenedSession {
  sessionId: string;
  /** The cookie value; only its SHA-256 is stored. */
  token: string;
  receipt?: string;
}

/**
 * Signs a browser in inside the caller's transaction. Every sign-in is an authentication, so the
 * browser leaves with a new session token either way (docs/security.md#session-tokens):
 * - the browser already has a live session of this account: that session is renewed (same id,
 *   device, history and grants; a new token; what this sign-in proved, see `Authentication`),
 *   with a `session.renewed` event, so the account page still shows one session;
 * - otherwise a new session is created with its `session.started` event and the device goes in
 *   the ledger; a session of ANOTHER account that the browser had is ended first (with its
 *   grants), so a sign-in never leaves two.
 * The caller sets the cookie (`setSessionCookies`).
 */
export async function openSession(
  services: SessionServices,
  tx: Stores,
  browser: SignInBrowser,
  input: StartSessionInput,
): Promise<OpenedSession> {
  const now = services.now();
  const { lifetimes } = services.config;
  // Every sign-in (passkey, backup code, magic link) ends here, so this one check covers them all.
  await requireSignInAllowed(tx, input.identityId);
  const previous = browser.previous;
  const sameAccount = previous !== undefined && previous.identityId === input.identityId;
  const notAfter = await requiredSsoDeadline(tx, input, sameAccount ? previous : undefined, now);
  if (sameAccount) {
    const renewed = await renewSessionToken(services, tx, previous, { kind: 'sign-in', ...input }, notAfter);
    // Null: that session ended or was renewed meanwhile; this sign-in then starts a new one,
    // except a required-SSO passkey, which only steps up the session the upstream started.
    if (!renewed && notAfter !== undefined && input.upstream === undefined)
      throw fail('sso_required', 'this session ended meanwhile: sign in through your organization again');
    if (renewed) {
      const { receipt } = await services.events.record(tx, {
        type: 'session.renewed',
        at: now,
        outcome: 'success',
        identityId: input.identityId,
        sessionId: renewed.sessionId,
        deviceId: renewed.deviceId,
        method: METHOD[input.assurance],
        assurance: renewed.assurance,
      });
      const { sessionId, token } = renewed;
      return receipt === undefined ? { sessionId, token } : { sessionId, token, receipt };
    }
  } else if (previous) {
    // Another account's session: this is its end (a sign-out of that account), not a renewal.
    await endSessionIn(services, tx, previous, now);
  }

  const deviceId = input.deviceId ?? browser.deviceId();
  const token = randomToken(32);
  const sessionId = randomId('ses');
  const absoluteExpiresAt = Math.min(now + lifetimes.sessionAbsolute * 1000, notAfter ?? Infinity);
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
  await tx.devices.upsert(input.identityId, deviceId, now, browser.userAgent ?? null);
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

/**
 * Required SSO (docs/federation.md#required-sso): an account its org signs in at the upstream
 * takes an upstream sign-in (its session then ends within the connection's cap), or a passkey
 * only as a step-up of this browser's session that an upstream sign-in started (within the
 * same cap); anything else is `sso_required`. Undefined for every other account.
 */
async function requiredSsoDeadline(
  tx: Stores,
  input: StartSessionInput,
  previous: PresentedSession | undefined,
  now: number,
): Promise<number | undefined> {
  const sso = await requiredSsoFor(tx, input.identityId);
  if (sso === null) return undefined;
  if (input.upstream !== undefined) return now + sso.sessionMaxMs;
  refuseOwnMethod(input.assurance);
  if (previous === undefined)
    throw fail('sso_required', 'sign in through your organization first: your passkey confirms it afterwards');
  return upstreamDeadline(tx, sso, previous.id, now);
}
