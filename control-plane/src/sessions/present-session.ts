import { effectiveAssurance } from '#lib/assurance/assurance.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import { renewedTokenKey } from './renew-session.js';

/** What looking up a presented session reads and writes. */
export type PresentSessionServices = Pick<ControlPlaneServices, 'storage' | 'state' | 'config' | 'now'>;

/** last-seen is written at most this often per session, so reads do not turn into writes. */
const TOUCH_EVERY_MS = 60_000;

/** The session a cookie named, or why there is none. */
export type PresentedSessionLookup =
  | { live: true; view: SessionView; tokenHash: string }
  /** `renewedAway`: the token was replaced by a renewal a moment ago, so the browser holds the new one. */
  | { live: false; renewedAway: boolean };

/**
 * The live session a well-formed session cookie token names, with its effective assurance now;
 * its last-seen time is moved forward at most once a minute.
 */
export async function lookUpPresentedSession(
  services: PresentSessionServices,
  token: string,
): Promise<PresentedSessionLookup> {
  const now = services.now();
  const tokenHash = sha256Hex(token);
  const stored = await services.storage.sessions.findLive(tokenHash, now);
  if (!stored) return { live: false, renewedAway: (await services.state.get(renewedTokenKey(tokenHash))) !== null };
  if (now - stored.lastSeenAt >= TOUCH_EVERY_MS)
    await services.storage.sessions.touch(stored.sessionId, now, now + services.config.lifetimes.sessionIdle * 1000);
  const view: SessionView = {
    id: stored.sessionId,
    identityId: stored.identityId,
    deviceId: stored.deviceId,
    assurance: effectiveAssurance(stored, now, services.config.lifetimes.stepUp * 1000),
    amr: stored.amr,
    authTime: stored.authTime,
  };
  return { live: true, view, tokenHash };
}
