import { rankAssurance } from '#lib/assurance/assurance.js';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices } from '../context.js';
import type { SessionAssurance, SessionRenewal, Stores, StoredSession } from '../storage/interface.js';

/** The session a request presented: its id, its account and the hash of the cookie it came with. */
export interface PresentedSession {
  id: string;
  identityId: string;
  /** SHA-256 (hex) of the cookie value this request carried: what a renewal must replace. */
  tokenHash: string;
}

/**
 * What an authentication proved:
 * - a sign-in (passkey, backup code, magic link): the session takes what it proved, as a new
 *   session would (level, amr, auth_time, passkey; no step-up window), so `auth_time` never
 *   vouches for a stronger method than the one just used. With `keepStrongerSession` (a magic
 *   link, docs/accounts.md#magic-links), a session that proved at least as much keeps its state
 *   and only gets the new token: never downgraded, and never passed off as a fresh sign-in;
 * - a step-up: the session is raised (at least `passkey`, the amr gains the step-up's methods)
 *   and counts as `sensitive` for `lifetimes.stepUp` from now.
 */
export type Authentication =
  | {
      kind: 'sign-in';
      assurance: SessionAssurance;
      /** RFC 8176 method references of this sign-in. */
      amr: readonly string[];
      /** The passkey used, for passkey sign-ins. */
      credId?: string | undefined;
      keepStrongerSession?: boolean | undefined;
    }
  | { kind: 'step-up'; amr: readonly string[]; credId: string };

export interface RenewedSession {
  sessionId: string;
  deviceId: string;
  /** The session's level after the authentication. */
  assurance: SessionAssurance;
  /** The new cookie value; only its SHA-256 is stored. */
  token: string;
}

export type RenewServices = Pick<ControlPlaneServices, 'config' | 'state' | 'now'>;

/**
 * Marks a token renewed away, for a minute: a request still in flight with it when the new
 * cookie arrived is refused like any unknown token, but its answer does not clear the cookie,
 * which by then holds the new token (plugins/session.ts).
 */
export const renewedTokenKey = (tokenHash: string) => `session:renewed:${tokenHash}`;
const RENEWED_MARK_MS = 60_000;

/** What the session holds after the authentication: the new state, or (kept) the state it had. */
function provedState(
  stored: StoredSession,
  authentication: Authentication,
  now: number,
): Pick<SessionRenewal, 'assurance' | 'amr' | 'authTime' | 'stepUpAt' | 'credId'> {
  if (authentication.kind === 'step-up')
    return {
      // A step-up re-verifies a passkey: the base level becomes `passkey` (the strongest base).
      assurance: 'passkey',
      amr: [...new Set([...stored.amr, ...authentication.amr])],
      authTime: now,
      stepUpAt: now,
      credId: authentication.credId,
    };
  const kept =
    authentication.keepStrongerSession === true &&
    rankAssurance(stored.assurance) >= rankAssurance(authentication.assurance);
  if (kept)
    return {
      assurance: stored.assurance,
      amr: stored.amr,
      authTime: stored.authTime,
      stepUpAt: stored.stepUpAt,
      credId: stored.credId,
    };
  return {
    assurance: authentication.assurance,
    amr: [...authentication.amr],
    authTime: now,
    stepUpAt: null,
    credId: authentication.credId ?? null,
  };
}

/**
 * A new session token at an authentication, the old one ended in the same storage step
 * (OWASP ASVS 5.0 V7.2.4; docs/security.md#session-tokens). The session keeps its id (the OIDC
 * `sid` that ID tokens, grants and the gateways' deny lists name), its account, device and
 * creation time, so its grants and history carry over and the account page still shows one
 * session; what changes is the secret a browser holds, what the session proved (see
 * `Authentication`), and both lifetimes, which count from this authentication (V7.3.2:
 * re-authentication starts a new absolute lifetime), never past `notAfter` (required SSO's cap,
 * docs/federation.md#required-sso).
 *
 * Renewal is NOT the end of a session: nothing that reacts to a session ending (its grants
 * ending, the gateways' deny list, OIDC back-channel logout) runs here, because the session goes
 * on under the same `sid`. Ending belongs to `end-session.ts`.
 *
 * Null when the presented session is no longer live under that token (ended, expired, or renewed
 * by a concurrent request): the caller decides whether that refuses (a step-up) or starts afresh
 * (a sign-in).
 */
export async function renewSessionToken(
  services: RenewServices,
  tx: Stores,
  presented: PresentedSession,
  authentication: Authentication,
  notAfter?: number,
): Promise<RenewedSession | null> {
  const now = services.now();
  const { lifetimes } = services.config;
  const stored = await tx.sessions.findLive(presented.tokenHash, now);
  if (!stored || stored.sessionId !== presented.id || stored.identityId !== presented.identityId) return null;
  const token = randomToken(32);
  const proved = provedState(stored, authentication, now);
  const absoluteExpiresAt = Math.min(now + lifetimes.sessionAbsolute * 1000, notAfter ?? Infinity);
  const renewed = await tx.sessions.renewToken(
    stored.sessionId,
    presented.tokenHash,
    {
      tokenHash: sha256Hex(token),
      ...proved,
      lastSeenAt: now,
      idleExpiresAt: Math.min(absoluteExpiresAt, now + lifetimes.sessionIdle * 1000),
      absoluteExpiresAt,
    },
    now,
  );
  if (!renewed) return null;
  await services.state.set(renewedTokenKey(presented.tokenHash), '1', RENEWED_MARK_MS);
  await tx.devices.upsert(stored.identityId, stored.deviceId, now);
  return { sessionId: stored.sessionId, deviceId: stored.deviceId, assurance: proved.assurance, token };
}
