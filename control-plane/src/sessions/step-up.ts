import { checkSignInPolicy } from '../passkeys/policy.js';
import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { fail } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import {
  CredentialLimits,
  readAssertion,
  requestOptions,
  takeChallenge,
  verifyAssertion,
} from '../passkeys/ceremony.js';
import { requiredSsoFor, upstreamDeadline } from '../federation/required-sso.js';
import { requireTotpIfActive } from '../totp/step-up-gate.js';
import { type PresentedSession, renewSessionToken } from './renew-session.js';

export type StepUpServices = Pick<
  ControlPlaneServices,
  'config' | 'state' | 'storage' | 'secrets' | 'events' | 'metadata' | 'now'
>;

/** Step 1: request options limited to the account's own passkeys, bound to this session. The per-IP limit is the caller's. */
export async function beginStepUp(
  services: StepUpServices,
  session: SessionView,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  await new CredentialLimits(services).perAccount('step-up', session.identityId);
  const allow = await services.storage.credentials.listByIdentity(session.identityId);
  return requestOptions(services, allow, { purpose: 'step-up', identityId: session.identityId, sessionId: session.id });
}

/**
 * Step 2: the assertion must come from a passkey of this account, for the challenge this very
 * session asked for, plus the TOTP code when the account has TOTP active. A step-up is an
 * authentication, so the session gets a new token (docs/security.md#session-tokens): the token
 * presented here is ended in the same storage step and never becomes `sensitive`; the new one
 * counts as `sensitive` for `lifetimes.stepUp` seconds, with `auth_time` at now. Returns the new
 * cookie value (for the caller to set) and when the window ends.
 */
export async function completeStepUp(
  services: StepUpServices,
  session: SessionView & PresentedSession,
  input: { response: unknown; totpCode?: string | undefined },
): Promise<{ token: string; expiresAt: number; receipt?: string }> {
  await new CredentialLimits(services).perAccount('step-up', session.identityId);
  const { id, clientData, fields, userHandle } = await readAssertion(input.response);
  const state = await takeChallenge(services, clientData, 'step-up');
  if (state.identityId !== session.identityId || state.sessionId !== session.id)
    throw fail('challenge_mismatch', 'this step-up was started by another session');
  const credential = await services.storage.credentials.get(id);
  if (!credential || credential.identityId !== session.identityId)
    throw fail('unknown_credential', 'this passkey does not belong to your account');
  if (userHandle !== undefined && userHandle !== credential.identityId)
    throw fail('unknown_credential', 'this passkey does not belong to your account');
  const use = await verifyAssertion(services, input.response, clientData, fields, credential);
  // The org's passkey policy, once the passkey proved itself (docs/passkeys.md#org-policy).
  await checkSignInPolicy(services, credential);
  const totp = await requireTotpIfActive(services, session.identityId, input.totpCode);
  const now = services.now();
  // RFC 8176: a passkey with user verification adds `pop` and `user`; with a TOTP code, `otp` and `mfa`.
  const amr = ['pop', 'user', ...(totp ? ['otp', 'mfa'] : [])];
  const { token, receipt } = await services.storage.transaction(async (tx) => {
    await tx.credentials.recordUse(credential.credId, { ...use, at: now });
    // Required SSO (docs/federation.md#required-sso): the passkey steps up only a session an
    // upstream sign-in started, and never past that sign-in's cap.
    const sso = await requiredSsoFor(tx, session.identityId);
    const notAfter = sso === null ? undefined : await upstreamDeadline(tx, sso, session.id, now);
    const renewed = await renewSessionToken(
      services,
      tx,
      session,
      { kind: 'step-up', amr, credId: credential.credId },
      notAfter,
    );
    // The session ended, or another request renewed its token, while this step-up was verified.
    if (!renewed) throw fail('unauthorized', 'this session ended or changed meanwhile; sign in again');
    const recorded = await services.events.record(tx, {
      type: 'step_up.completed',
      at: now,
      outcome: 'success',
      identityId: session.identityId,
      sessionId: session.id,
      credId: credential.credId,
      totp,
    });
    return { token: renewed.token, receipt: recorded.receipt };
  });
  return { token, expiresAt: now + services.config.lifetimes.stepUp * 1000, ...(receipt ? { receipt } : {}) };
}
