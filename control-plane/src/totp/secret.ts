import { fail } from '#lib/errors/keyplane-error.js';
import { verifyTotpCode } from '#lib/totp/totp.js';
import type { StoredTotp } from '../storage/interface.js';
import { assertNotLocked, recordCodeFailure, recordCodeSuccess } from '../lockouts/code-lockout.js';
import type { ControlPlaneServices } from '../context.js';

/** What these functions read. */
export type TotpServices = Pick<ControlPlaneServices, 'config' | 'state' | 'storage' | 'events' | 'secrets' | 'now'>;

/** The sealed-box context: a TOTP secret opens only for the account it was sealed for. */
export function totpSealContext(identityId: string): string {
  return `totp:${identityId}`;
}

export function openTotpSecret(services: TotpServices, record: StoredTotp): string {
  return services.secrets.open(totpSealContext(record.identityId), record.sealedSecret).toString('utf8');
}

/**
 * Checks a code against the account's TOTP secret (pending or active) with lockout: a locked
 * account is refused before the code is looked at; a wrong code counts one failure (and the one
 * that reaches the threshold answers `locked_out`); a replayed step is refused without counting.
 * Returns the accepted time step; for an active secret it is already recorded as used.
 */
export async function checkTotpCode(services: TotpServices, record: StoredTotp, code: string): Promise<number> {
  const { identityId } = record;
  await assertNotLocked(services, 'totp', identityId);
  const result = verifyTotpCode(code, {
    secretBase32: openTotpSecret(services, record),
    now: services.now(),
    lastUsedStep: record.state === 'active' ? record.lastUsedStep : null,
  });
  if (!result.ok) {
    if (result.why === 'replayed') throw fail('totp_replayed', 'this code was used already; wait for the next one');
    throw (
      (await recordCodeFailure(services, 'totp', identityId)) ??
      fail('totp_invalid', 'that code is not right; check the time on your device')
    );
  }
  // One conditional update decides between concurrent uses of the same code.
  if (record.state === 'active' && !(await services.storage.totp.useStep(identityId, result.step))) {
    throw fail('totp_replayed', 'this code was used already; wait for the next one');
  }
  await recordCodeSuccess(services, 'totp', identityId);
  return result.step;
}
