import type { AssuranceLevel } from '#lib/assurance/assurance.js';
import type { VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import { decideDevicePoll } from '#lib/oauth/device-code.js';
import { oauthError } from '#lib/oauth/errors.js';
import { outlivesSession } from '#lib/oauth/authorization-request.js';
import { formatScope } from '#lib/oauth/scope.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import type { StoredClient, StoredGrant } from '../../storage/interface.js';
import {
  deviceKeyOf,
  forgetAuthorization,
  pollAllowed,
  readAuthorization,
  takeApproved,
  type DeviceServices,
} from '../device-authorization.js';
import { mintTokens, userClaims } from '../tokens.js';
import { stringParam } from '../token-request.js';
import { writeNewGrant, type GrantResult, type GrantServices } from './grant-records.js';
import { checkClientAccess } from '../../clients/sign-in-access.js';

/** RFC 8628 §3.5 answers that are not errors of the client but of timing or the person's choice. */
const POLL_ERRORS = {
  authorization_pending: 'the person has not approved the request yet; poll again after the interval',
  slow_down: 'polling too fast: wait 5 seconds longer between polls from now on',
  access_denied: 'the person declined the request',
  expired_token: 'the device code expired; start again',
} as const;

/**
 * The device-code grant (RFC 8628 §3.4-§3.5): the client polls with its device code until the
 * person decided on the verification page. An approved authorization is taken once, atomically,
 * and becomes a grant like a code's: the approving sign-in's assurance and methods, a refresh
 * token with `offline_access`, a `token.issued` receipt.
 */
export async function deviceCodeGrant(
  services: GrantServices & DeviceServices,
  client: StoredClient,
  body: Record<string, unknown>,
  proof: VerifiedDpopProof | null,
): Promise<GrantResult> {
  const deviceCode = stringParam(body, 'device_code');
  if (!deviceCode) throw oauthError('invalid_request', 'device_code is required');
  const deviceKey = deviceKeyOf(deviceCode);
  const authorization = await readAuthorization(services, deviceKey);
  const now = services.now();
  const mine = authorization !== null && authorization.clientId === client.clientId && now < authorization.expiresAt;
  const answer = decideDevicePoll({
    authorization,
    clientId: client.clientId,
    now,
    pollAllowed: mine ? await pollAllowed(services, deviceKey) : true,
  });
  if (answer === 'invalid_grant') throw oauthError('invalid_grant', 'the device code is unknown or was used already');
  if (answer !== 'issue') {
    if (answer === 'access_denied') await forgetAuthorization(services, deviceKey);
    throw oauthError(answer, POLL_ERRORS[answer], { status: 400 });
  }
  const approved = await takeApproved(services, deviceKey);
  if (!approved?.approvedBy) throw oauthError('invalid_grant', 'the device code was used already');
  const by = approved.approvedBy;
  if ((await services.storage.identities.state(by.identityId)) !== 'active')
    throw oauthError('invalid_grant', 'the account is disabled or deleted');
  // Read again at issue: the approval may predate a membership that ended while the device polled.
  const admitted = await checkClientAccess(services, client, by.identityId, 'device');
  if (!admitted.allowed) throw oauthError('access_denied', POLL_ERRORS.access_denied, { status: 400 });

  const { config, storage } = services;
  const grant: StoredGrant = {
    grantId: randomId('gr'),
    clientId: client.clientId,
    identityId: by.identityId,
    sessionId: by.sessionId,
    scope: formatScope(approved.scopes),
    resource: approved.resource,
    assurance: by.assurance as AssuranceLevel,
    amr: by.amr,
    authTime: by.authTime,
    createdAt: now,
    expiresAt: now + config.lifetimes.refreshTokenAbsolute * 1000,
    revokedAt: null,
    // The device is not the browser that approved it: with offline_access its grant outlives that sign-in.
    offline: outlivesSession({ scopes: approved.scopes, gatewayClient: false, approval: 'new' }),
  };
  const withRefresh =
    approved.scopes.includes('offline_access') && client.metadata.grant_types.includes('refresh_token');
  const refreshToken = withRefresh ? randomToken(32) : undefined;
  const { receipt } = await storage.transaction((tx) =>
    writeNewGrant(services, tx, { grant, client, proof, refreshToken, resource: grant.resource, now }),
  );
  const idToken = approved.scopes.includes('openid');
  const minted = await mintTokens(services, {
    grant,
    scopes: approved.scopes,
    resource: grant.resource,
    dpopJkt: proof?.jkt ?? null,
    nonce: null,
    idToken,
    ...(idToken ? { claims: await userClaims(services, grant.identityId) } : {}),
  });
  return {
    minted,
    scopes: approved.scopes,
    ...(refreshToken ? { refreshToken } : {}),
    ...(receipt ? { receipt } : {}),
    proof,
  };
}
