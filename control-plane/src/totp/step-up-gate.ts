import { fail } from '#lib/errors/keyplane-error.js';
import { checkTotpCode, type TotpServices } from './secret.js';

/**
 * The TOTP half of a step-up (docs/accounts.md#assurance-and-step-up: `sensitive` is a passkey re-verified plus TOTP
 * when the account has TOTP active). When TOTP is active, a missing code is `totp_required`, a
 * wrong one `totp_invalid` (counted toward lockout: 5 failures lock TOTP for 15 minutes), a code
 * of an already used time step `totp_replayed`, and a locked account `locked_out`.
 * Resolves to true when a code was verified (the step-up's amr then includes `otp`), false when
 * TOTP is off or only pending (a pending setup protects nothing until it is confirmed).
 */
export async function requireTotpIfActive(
  services: TotpServices,
  identityId: string,
  totpCode: string | undefined,
): Promise<boolean> {
  const record = await services.storage.totp.get(identityId);
  if (!record || record.state !== 'active') return false;
  if (totpCode === undefined || totpCode === '')
    throw fail('totp_required', 'TOTP is on for this account: enter the 6-digit code from your app', {
      fields: { totp: 'required' },
    });
  await checkTotpCode(services, record, totpCode);
  return true;
}

/** Whether a step-up of this account asks for a TOTP code (its TOTP is active), for the page to ask. */
export async function stepUpAsksTotp(services: Pick<TotpServices, 'storage'>, identityId: string): Promise<boolean> {
  return (await services.storage.totp.get(identityId))?.state === 'active';
}
