import { checkUsername } from '#lib/accounts/username.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { defaultPasskeyLabel } from '#lib/webauthn/authenticator-names.js';
import { checkAuthorizationRequest, type AuthorizationRequest } from '#lib/oauth/authorization-request.js';
import { buildPopupUrl, decideInPlaceConsent } from '#lib/oauth/in-place.js';
import { formatScope } from '#lib/oauth/scope.js';
import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
} from '@simplewebauthn/server';
import { constantEquals } from '#lib/crypto/constant-equals.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { requireSignInAllowed } from '../accounts/lifecycle.js';
import type { ControlPlaneServices } from '../context.js';
import {
  CredentialLimits,
  creationOptions,
  readAssertion,
  readRegistration,
  requestOptions,
  takeChallenge,
  verifyAssertion,
  verifyRegistration,
} from '../passkeys/ceremony.js';
import { PASSKEY_AMR, credentialRecord } from '../accounts/sign-up.js';
import type { StoredClient } from '../storage/interface.js';
import { credentialsForUsername } from '../passkeys/decoy.js';
import { checkSignInAccess } from '../clients/sign-in-access.js';
import { authorizationClientOf } from './authorization-client.js';
import { approvalOf } from '../consent/gate.js';
import { requiredSsoFor } from '../federation/required-sso.js';
import { checkSignInPolicy } from '../passkeys/policy.js';

/** What the direct grant runs on. */
export type DirectGrantServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'events' | 'secrets' | 'metadata' | 'now'
>;

/** The client and the origin it was called from, after the shared in-place origin check. */
export interface DirectCaller {
  client: StoredClient;
  /** The request's Origin, one of the client's registered origins. */
  origin: string;
  /** The caller's address, for the per-address limit. */
  ip: string;
}

/** A sign-up started on the relying party's page, kept under its challenge until the registration comes back. */
interface DirectSignup {
  signupTokenHash: string;
  identityId: string;
  username: string;
  clientId: string;
  origin: string;
}

const signupKey = (challenge: string) => `direct:signup:${sha256Hex(challenge)}`;

/**
 * Step 1 of the direct grant (docs/in-place.md#direct-grant): WebAuthn options for a ceremony on
 * the relying party's origin. A sign-in gets usernameless options, or options limited to the
 * named account's passkeys (an unknown name gets options too, so names cannot be probed). A
 * sign-up (first-party clients only: a new account has approved nothing) gets creation options
 * and a signup token.
 */
export async function directGrantOptions(
  services: DirectGrantServices,
  caller: DirectCaller,
  input: { username?: string; signup?: boolean },
): Promise<{
  options: PublicKeyCredentialCreationOptionsJSON | PublicKeyCredentialRequestOptionsJSON;
  signupToken?: string;
}> {
  const { storage, state, config } = services;
  const { client, origin } = caller;
  const limits = new CredentialLimits(services);
  await limits.perIp(caller, 'direct-options');
  if (input.signup === true) {
    if (input.username === undefined) throw fail('invalid_request', 'a sign-up needs a username');
    const username = checkUsername(input.username);
    await limits.perAccount('signup', username);
    if (!config.signup.selfService) throw fail('signup_closed', 'sign-up is closed on this server; ask its operator');
    if (client.metadata.first_party !== true)
      throw fail('consent_required', 'sign up in the popup: this app is not first-party', { status: 403 });
    if (await storage.identities.findByUsername(username)) throw fail('username_taken', 'that username is taken');
    const identityId = randomId('usr');
    const options = await creationOptions(services, { identityId, username, displayName: '' }, []);
    const signupToken = randomToken(32);
    const pending: DirectSignup = {
      signupTokenHash: sha256Hex(signupToken),
      identityId,
      username,
      clientId: client.clientId,
      origin,
    };
    if (
      !(await state.setIfAbsent(
        signupKey(options.challenge),
        JSON.stringify(pending),
        config.lifetimes.challenge * 1000,
      ))
    ) {
      throw fail('internal', 'challenge collision');
    }
    return { options, signupToken };
  }
  const ceremony = { purpose: 'direct' as const, clientId: client.clientId, origin };
  if (input.username === undefined || input.username === '')
    return { options: await requestOptions(services, null, ceremony) };
  const username = checkUsername(input.username);
  await limits.perAccount('direct-options', username);
  // An unknown name gets the decoy /auth/assertion-options gives it: the same shape either way.
  const { identityId, allow } = await credentialsForUsername(services, username);
  return { options: await requestOptions(services, allow, { ...ceremony, identityId }) };
}

/** The authorization request part of the body, checked like /auth/authorize (exact redirect URI, PKCE S256, scopes). */
function checkRequest(client: StoredClient, body: Record<string, unknown>): AuthorizationRequest {
  const params: Record<string, unknown> = { response_type: 'code', scope: 'openid' };
  for (const name of [
    'client_id',
    'redirect_uri',
    'code_challenge',
    'code_challenge_method',
    'state',
    'nonce',
    'scope',
    'resource',
  ]) {
    if (body[name] !== undefined) params[name] = body[name];
  }
  const check = checkAuthorizationRequest(params, authorizationClientOf(client));
  if (check.ok) return check.request;
  if (check.target === null)
    throw fail('invalid_redirect_uri', 'redirect_uri is not registered for this client (it must match exactly)');
  throw fail(
    check.error === 'invalid_scope' || check.error === 'invalid_target' ? check.error : 'invalid_request',
    check.description,
  );
}

/** One ceremony on the caller's origin: an assertion signs in, a registration creates the account. */
async function runCeremony(
  services: DirectGrantServices,
  caller: DirectCaller,
  body: Record<string, unknown>,
): Promise<{ identityId: string; created: boolean }> {
  const { storage, state, events } = services;
  const { client, origin } = caller;
  const limits = new CredentialLimits(services);
  const assertion = body.assertion as { user?: unknown; response: unknown } | undefined;
  const registration = body.registration as { user: string; response: unknown; signupToken?: string } | undefined;
  if ((assertion === undefined) === (registration === undefined))
    throw fail('invalid_request', 'send exactly one of assertion and registration');
  if (assertion) {
    const { id, clientData, fields, userHandle } = await readAssertion(assertion.response);
    const ceremony = await takeChallenge(services, clientData, 'direct');
    if (ceremony.clientId !== client.clientId || ceremony.origin !== origin)
      throw fail('challenge_mismatch', 'the ceremony was started for another client or origin');
    const credential = await storage.credentials.get(id);
    if (!credential) throw fail('unknown_credential', 'this passkey is not registered here');
    if (ceremony.identityId && ceremony.identityId !== credential.identityId)
      throw fail('unknown_credential', 'this passkey does not belong to that account');
    if (assertion.user !== undefined && assertion.user !== null && assertion.user !== '') {
      const identity = await storage.identities.findByUsername(checkUsername(assertion.user));
      if (!identity || identity.identityId !== credential.identityId)
        throw fail('unknown_credential', 'this passkey does not belong to that account');
    }
    if (userHandle !== undefined && userHandle !== credential.identityId)
      throw fail('unknown_credential', 'this passkey does not belong to that account');
    await limits.perAccount('signin', credential.identityId);
    // The response must have been made on this very origin (WebAuthn L3 §7.2 step 9).
    const use = await verifyAssertion(services, assertion.response, clientData, fields, credential, [origin]);
    // An operator's pause holds on every transport (docs/in-place.md#disabled-accounts).
    await requireSignInAllowed(storage, credential.identityId);
    // The org's passkey policy, once the passkey proved itself, as at /auth (docs/passkeys.md#org-policy).
    await checkSignInPolicy(services, credential);
    await storage.credentials.recordUse(credential.credId, { ...use, at: services.now() });
    return { identityId: credential.identityId, created: false };
  }
  const { clientData, fields } = await readRegistration(registration!.response);
  const raw = await state.take(signupKey(clientData.challenge));
  if (raw === null) throw fail('challenge_unknown', 'this sign-up expired or was finished already; start again');
  const pending = JSON.parse(raw) as DirectSignup;
  if (pending.clientId !== client.clientId || pending.origin !== origin)
    throw fail('challenge_mismatch', 'the sign-up was started for another client or origin');
  if (
    registration!.signupToken !== undefined &&
    !constantEquals(sha256Hex(registration!.signupToken), pending.signupTokenHash)
  ) {
    throw fail('challenge_mismatch', 'the signup token belongs to another sign-up');
  }
  if (checkUsername(registration!.user) !== pending.username)
    throw fail('challenge_mismatch', 'the sign-up was started for another username');
  await limits.perAccount('signup', pending.username);
  const verified = await verifyRegistration(
    services,
    registration!.response,
    clientData,
    fields,
    clientData.challenge,
    [origin],
  );
  const now = services.now();
  await storage.transaction(async (tx) => {
    const created = await tx.identities.create({
      identityId: pending.identityId,
      username: pending.username,
      displayName: '',
      preferences: {},
      founder: false,
      createdAt: now,
      updatedAt: now,
    });
    if (!created) throw fail('username_taken', 'that username was taken in the meantime');
    if (
      !(await tx.credentials.insert(
        credentialRecord(pending.identityId, verified, defaultPasskeyLabel(verified.aaguid, 1), now),
      ))
    )
      throw fail('credential_exists', 'this passkey is registered already');
    await events.record(tx, {
      type: 'account.created',
      at: now,
      outcome: 'success',
      identityId: pending.identityId,
      founder: false,
      credId: verified.credId,
    });
  });
  return { identityId: pending.identityId, created: true };
}

/**
 * Step 2 of the direct grant (docs/in-place.md#direct-grant): the passkey response from the
 * relying party's page, answered with a one-time authorization code bound to the client, the
 * redirect URI and the PKCE challenge. An account with TOTP active, and a third-party client
 * without a prior approval of the scopes and resource, are sent to the popup. No cookie is set:
 * the grant gets its own cookieless session at the issuer, revocable from the account page.
 */
export async function directGrant(
  services: DirectGrantServices,
  caller: DirectCaller,
  body: Record<string, unknown>,
): Promise<{ code: string; state: string; iss: string; receipt?: string }> {
  const { storage, config, events } = services;
  const { client } = caller;
  await new CredentialLimits(services).perIp(caller, 'direct');
  const authz = checkRequest(client, body);
  const popup = buildPopupUrl(config.issuer, {
    clientId: client.clientId,
    redirectUri: authz.redirectUri,
    codeChallenge: authz.codeChallenge,
    scope: formatScope(authz.scopes),
    ...(authz.state !== undefined ? { state: authz.state } : {}),
    ...(authz.nonce !== undefined ? { nonce: authz.nonce } : {}),
  });
  const { identityId } = await runCeremony(services, caller, body);
  // Required SSO (docs/federation.md#required-sso): the passkey only steps up a session an upstream
  // sign-in started, and the direct grant starts a session of its own; the popup offers the org's sign-in.
  if ((await requiredSsoFor(storage, identityId)) !== null)
    throw fail('sso_required', 'sign in through your organization in the popup: your passkey confirms it afterwards', {
      fields: { popup },
    });
  // The direct grant cannot ask for a TOTP code: the popup can (docs/in-place.md).
  const totp = await storage.totp.get(identityId);
  if (totp?.state === 'active')
    throw fail('step_up_required', 'this account also needs its TOTP code: sign in through the popup', {
      fields: { popup },
    });
  const consent = decideInPlaceConsent({
    transport: 'direct',
    request: authz,
    approval: await approvalOf(services, identityId, client.clientId),
    firstParty: client.metadata.first_party === true,
  });
  if (!consent.allowed)
    throw fail('consent_required', 'approve this app once in the popup', { status: 403, fields: { popup } });
  // The client's access.orgs (docs/orgs.md#who-may-sign-in-to-an-app); the popup shows the person why.
  const access = await checkSignInAccess(
    services,
    { id: client.clientId, orgs: client.metadata.access.orgs },
    identityId,
    'direct',
  );
  if (!access.allowed)
    throw fail('access_denied', 'this account is not a member of an organization this client admits', {
      fields: { error: 'access_denied', popup },
    });

  const now = services.now();
  const code = randomToken(32);
  const receipt = await storage.transaction(async (tx) => {
    // Checked again inside the transaction: an account disabled during the ceremony gets nothing.
    await requireSignInAllowed(tx, identityId);
    const sessionId = randomId('ses');
    const deviceId = randomId('dev');
    const absoluteExpiresAt = now + config.lifetimes.sessionAbsolute * 1000;
    await tx.sessions.insert({
      sessionId,
      tokenHash: sha256Hex(randomToken(32)),
      identityId,
      deviceId,
      assurance: 'passkey',
      amr: [...PASSKEY_AMR],
      authTime: now,
      stepUpAt: null,
      credId: null,
      createdAt: now,
      lastSeenAt: now,
      idleExpiresAt: Math.min(absoluteExpiresAt, now + config.lifetimes.sessionIdle * 1000),
      absoluteExpiresAt,
      revokedAt: null,
    });
    await tx.devices.upsert(identityId, deviceId, now);
    await tx.oidc.insertCode({
      codeHash: sha256Hex(code),
      clientId: client.clientId,
      redirectUri: authz.redirectUri,
      identityId,
      sessionId,
      scope: formatScope(authz.scopes),
      resource: authz.resource ?? null,
      nonce: authz.nonce ?? null,
      codeChallenge: authz.codeChallenge,
      dpopJkt: null,
      offline: false,
      assurance: 'passkey',
      amr: PASSKEY_AMR,
      authTime: now,
      createdAt: now,
      expiresAt: now + config.lifetimes.authorizationCode * 1000,
      consumedAt: null,
      grantId: null,
    });
    const recorded = await events.record(tx, {
      type: 'signin.in_place',
      at: now,
      outcome: 'success',
      client_id: client.clientId,
      transport: 'direct',
      identityId,
      assurance: 'passkey',
    });
    return recorded.receipt;
  });
  return { code, state: authz.state ?? '', iss: config.issuer, ...(receipt ? { receipt } : {}) };
}
