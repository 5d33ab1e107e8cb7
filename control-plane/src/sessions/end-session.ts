import { fail } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices } from '../context.js';
import { endGrantsOfSessions } from '../grants/end-grants.js';
import type { Stores } from '../storage/interface.js';

export type EndSessionServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>;

/** Who asks: the session ending others (or itself), recorded as `by` on the event. */
export interface Asker {
  identityId: string;
  sessionId: string;
}

/**
 * Revokes one live session of the account and ends the grants it opened. Refuses an identifier
 * that names no live session of this account, so one account cannot probe another's sessions.
 */
export async function revokeSession(
  services: EndSessionServices,
  asker: Asker,
  identifier: string,
): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.sessions.revoke(asker.identityId, identifier, now)))
      throw fail('unknown_session', 'no live session with this identifier');
    await endGrantsOfSessions(services, tx, [identifier], now);
    return services.events.record(tx, {
      type: 'session.revoked',
      at: now,
      outcome: 'success',
      identityId: asker.identityId,
      sessionId: identifier,
      by: asker.sessionId,
    });
  });
}

/**
 * Revokes every session of one of the account's devices, ends their grants and drops the device
 * from the device ledger. Returns how many sessions ended.
 */
export async function revokeDevice(
  services: EndSessionServices,
  asker: Asker,
  deviceId: string,
): Promise<{ sessions: number; receipt?: string }> {
  const now = services.now();
  const { identityId } = asker;
  return services.storage.transaction(async (tx) => {
    const known = (await tx.devices.list(identityId)).some((d) => d.deviceId === deviceId);
    if (!known) throw fail('unknown_device', 'no device with this id on the account');
    const onDevice = (await tx.sessions.listLive(identityId, now))
      .filter((s) => s.deviceId === deviceId)
      .map((s) => s.sessionId);
    const sessions = await tx.sessions.revokeDevice(identityId, deviceId, now);
    await endGrantsOfSessions(services, tx, onDevice, now);
    await tx.devices.remove(identityId, deviceId);
    const { receipt } = await services.events.record(tx, {
      type: 'device.revoked',
      at: now,
      outcome: 'success',
      identityId,
      deviceId,
      sessions,
      by: asker.sessionId,
    });
    return { sessions, ...(receipt ? { receipt } : {}) };
  });
}

/** Ends the asking session itself (sign-out) and the grants it opened. */
export async function signOut(services: EndSessionServices, asker: Asker): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    await tx.sessions.revoke(asker.identityId, asker.sessionId, now);
    await endGrantsOfSessions(services, tx, [asker.sessionId], now);
    return services.events.record(tx, {
      type: 'session.ended',
      at: now,
      outcome: 'success',
      identityId: asker.identityId,
      sessionId: asker.sessionId,
    });
  });
}

/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0 §2): ends the session, naming the
 * client that asked, if any. Answers the front-channel logout URLs (OIDC Front-Channel Logout 1.0
 * §2, §4) of every client that got tokens in the session and registered one, each with `iss` and
 * `sid`, for the signed-out page to load in iframes.
 */
export async function logOut(
  services: EndSessionServices & Pick<ControlPlaneServices, 'config'>,
  asker: Asker,
  clientId: string | null,
): Promise<{ frontchannelLogoutUris: string[] }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const frontchannelLogoutUris: string[] = [];
    for (const participant of await tx.logouts.participants([asker.sessionId])) {
      const uri = (await tx.clients.get(participant.clientId))?.metadata.frontchannel_logout_uri;
      if (uri === undefined) continue;
      const url = new URL(uri);
      url.searchParams.set('iss', services.config.issuer);
      url.searchParams.set('sid', asker.sessionId);
      frontchannelLogoutUris.push(url.href);
    }
    await tx.sessions.revoke(asker.identityId, asker.sessionId, now);
    await endGrantsOfSessions(services, tx, [asker.sessionId], now);
    await services.events.record(tx, {
      type: 'session.logged_out',
      at: now,
      outcome: 'success',
      identityId: asker.identityId,
      sessionId: asker.sessionId,
      clientId,
    });
    return { frontchannelLogoutUris };
  });
}

/** Ends a session and the grants it opened inside the caller's transaction (the caller records the event). */
export async function endSessionIn(
  services: Pick<EndSessionServices, 'events'>,
  tx: Stores,
  session: { identityId: string; id: string },
  now: number,
): Promise<void> {
  await tx.sessions.revoke(session.identityId, session.id, now);
  await endGrantsOfSessions(services, tx, [session.id], now);
}
