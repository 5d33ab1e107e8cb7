import { apiAccessFor } from '../apis/apis.js';
import { grantableScopes } from '#lib/oauth/authorization-request.js';
import {
  DEVICE_CODE_LIFETIME_SECONDS,
  DEVICE_POLL_INTERVAL_SECONDS,
  generateUserCode,
  normalizeUserCode,
  type DeviceAuthorization,
} from '#lib/oauth/device-code.js';
import { oauthError } from '#lib/oauth/errors.js';
import { checkResource } from '#lib/oauth/resource.js';
import { requestableResources } from './mcp-resources.js';
import { parseScope } from '#lib/oauth/scope.js';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import type { StoredClient } from '../storage/interface.js';
import { authorizationClientOf } from './authorization-client.js';
import { checkClientAccess } from '../clients/sign-in-access.js';

/**
 * RFC 8628 pending authorizations in shared state, so every replica sees them: the device code
 * is known only by its SHA-256; the user code points at it and is taken once by the decision.
 */
export type DeviceServices = Pick<ControlPlaneServices, 'config' | 'state' | 'storage' | 'events' | 'now'>;

/** An expired authorization is kept this much longer, so that a poll hears `expired_token`, not `invalid_grant`. */
const EXPIRED_GRACE_MS = 10 * 60_000;

export interface StartedDeviceAuthorization {
  deviceCode: string;
  /** `XXXX-XXXX` */
  userCode: string;
  expiresIn: number;
  interval: number;
}

function recordKey(deviceKey: string): string {
  return `oidc:device:${deviceKey}`;
}

function userCodeKey(userCode: string): string {
  return `oidc:device-user:${userCode}`;
}

/** The key under which a device code's authorization is kept: its SHA-256. */
export function deviceKeyOf(deviceCode: string): string {
  return sha256Hex(deviceCode);
}

/**
 * RFC 8628 §3.1-§3.2: a device code and a user code for a client registered for the grant, with
 * the scopes it may have (unknown ones dropped, as at authorize) and at most one registered resource.
 */
export async function startDeviceAuthorization(
  services: DeviceServices,
  client: StoredClient,
  body: Record<string, unknown>,
): Promise<StartedDeviceAuthorization> {
  const api = await apiAccessFor(services, client, body.resource);
  const authorizationClient = authorizationClientOf(
    client,
    await requestableResources(services, client, body.resource),
    api,
  );
  if (!authorizationClient.allowsHumans)
    throw oauthError('unauthorized_client', 'this client is not registered for human sign-in');
  const resource = checkResource(authorizationClient.resources, body.resource) ?? null;
  const scopes = grantableScopes(parseScope(body.scope), authorizationClient, resource ?? undefined);
  const now = services.now();
  const deviceCode = randomToken(32);
  const deviceKey = deviceKeyOf(deviceCode);
  const lifetimeMs = DEVICE_CODE_LIFETIME_SECONDS * 1000;
  // A collision among live user codes is rare (2^34.6 codes); drawing again settles it.
  let userCode = '';
  for (let attempt = 0; attempt < 5 && !userCode; attempt++) {
    const candidate = generateUserCode();
    if (await services.state.setIfAbsent(userCodeKey(normalizeUserCode(candidate)!), deviceKey, lifetimeMs))
      userCode = candidate;
  }
  if (!userCode) throw oauthError('unavailable', 'no free user code; try again', { error: 'temporarily_unavailable' });
  const authorization: DeviceAuthorization = {
    clientId: client.clientId,
    scopes,
    resource,
    userCode: normalizeUserCode(userCode)!,
    expiresAt: now + lifetimeMs,
    status: 'pending',
  };
  await services.state.set(recordKey(deviceKey), JSON.stringify(authorization), lifetimeMs + EXPIRED_GRACE_MS);
  return { deviceCode, userCode, expiresIn: DEVICE_CODE_LIFETIME_SECONDS, interval: DEVICE_POLL_INTERVAL_SECONDS };
}

/** The pending authorization a typed user code names, or null (unknown, expired or decided already). */
export async function findByUserCode(
  services: DeviceServices,
  userCode: string,
): Promise<{ deviceKey: string; authorization: DeviceAuthorization } | null> {
  const deviceKey = await services.state.get(userCodeKey(userCode));
  if (!deviceKey) return null;
  const authorization = await readAuthorization(services, deviceKey);
  if (!authorization || authorization.status !== 'pending' || authorization.expiresAt <= services.now()) return null;
  return { deviceKey, authorization };
}

export async function readAuthorization(
  services: Pick<DeviceServices, 'state'>,
  deviceKey: string,
): Promise<DeviceAuthorization | null> {
  const stored = await services.state.get(recordKey(deviceKey));
  return stored ? (JSON.parse(stored) as DeviceAuthorization) : null;
}

/**
 * The person's decision on the verification page. The user code is taken first, so of two
 * decisions (two tabs, two people) exactly one counts; the device then hears it at its next
 * poll. Leaves a `device.decided` receipt. False when the code was decided or expired meanwhile.
 */
export async function decideDeviceAuthorization(
  services: DeviceServices,
  session: SessionView,
  userCode: string,
  approve: boolean,
): Promise<{ decided: boolean; receipt?: string; notAdmitted?: { client: StoredClient } }> {
  const deviceKey = await services.state.take(userCodeKey(userCode));
  if (!deviceKey) return { decided: false };
  const authorization = await readAuthorization(services, deviceKey);
  const now = services.now();
  if (!authorization || authorization.status !== 'pending' || authorization.expiresAt <= now) return { decided: false };
  // The rules are read again at the decision: a membership may have ended since the page was shown.
  const client = approve ? await services.storage.clients.get(authorization.clientId) : null;
  const admitted = client !== null && (await checkClientAccess(services, client, session.identityId, 'device')).allowed;
  const approved = approve && admitted;
  const decided: DeviceAuthorization = approved
    ? {
        ...authorization,
        status: 'approved',
        approvedBy: {
          identityId: session.identityId,
          sessionId: session.id,
          assurance: session.assurance,
          amr: session.amr,
          authTime: session.authTime,
        },
      }
    : { ...authorization, status: 'denied' };
  await services.state.set(
    recordKey(deviceKey),
    JSON.stringify(decided),
    authorization.expiresAt + EXPIRED_GRACE_MS - now,
  );
  const { receipt } = await services.storage.transaction((tx) =>
    services.events.record(tx, {
      type: 'device.decided',
      at: now,
      outcome: approved ? 'success' : 'failure',
      clientId: authorization.clientId,
      identityId: session.identityId,
      sessionId: session.id,
      decision: approved ? 'approved' : 'denied',
    }),
  );
  return {
    decided: true,
    ...(receipt ? { receipt } : {}),
    ...(client !== null && !admitted ? { notAdmitted: { client } } : {}),
  };
}

/**
 * Whether this poll comes at least the interval after the previous one (RFC 8628 §3.5 `slow_down`).
 * The mark lives one interval, a little less so that a client polling exactly on time is not refused.
 */
export async function pollAllowed(services: Pick<DeviceServices, 'state'>, deviceKey: string): Promise<boolean> {
  return services.state.setIfAbsent(`oidc:device-poll:${deviceKey}`, '1', DEVICE_POLL_INTERVAL_SECONDS * 1000 - 250);
}

/** Takes an approved authorization for the one exchange it allows; null when another poll took it first. */
export async function takeApproved(
  services: Pick<DeviceServices, 'state'>,
  deviceKey: string,
): Promise<DeviceAuthorization | null> {
  const stored = await services.state.take(recordKey(deviceKey));
  if (!stored) return null;
  const authorization = JSON.parse(stored) as DeviceAuthorization;
  return authorization.status === 'approved' ? authorization : null;
}

/** Forgets a denied authorization once the device has been told. */
export async function forgetAuthorization(services: Pick<DeviceServices, 'state'>, deviceKey: string): Promise<void> {
  await services.state.del(recordKey(deviceKey));
}
