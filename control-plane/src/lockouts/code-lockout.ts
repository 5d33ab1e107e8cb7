import { fail, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import { retryAfterSeconds } from '#lib/errors/rate-limited.js';
import { Lockout } from '#lib/runtime/security/lockout.js';
import type { ControlPlaneServices } from '../context.js';

/** What these functions read, and the lockout.started receipt they write. */
export type LockoutServices = Pick<ControlPlaneServices, 'config' | 'state' | 'storage' | 'events' | 'now'>;

/**
 * Guessing protection shared by the code-checking routes (TOTP, recovery codes): a lockout per
 * account and method after `limits.lockoutThreshold` failures for `limits.lockoutSeconds`
 * (docs/accounts.md#rate-limits), and a per-IP rate limit. A lockout start is an event (and so a receipt).
 *
 * A code anyone may try without a session (backup codes) names its `source` (the client address):
 * the lockout is then per account and source at the threshold. At {@link ACCOUNT_WIDE_FACTOR}
 * times it from all sources the account is under attack, and from then on until the window ends
 * every source that guessed wrong is refused while a source that did not still has its code
 * checked: a stranger's wrong guesses never refuse the owner's right code, and guessing stays
 * bounded overall, to one try per fresh address (docs/security.md#backup-code-lockout).
 */
export type CodeMethod = 'totp' | 'recovery';

/** How many times the per-source threshold an account takes, from all sources, before it locks for everyone. */
export const ACCOUNT_WIDE_FACTOR = 10;

/** The lockouts one failure counts in: the account-wide one, and the source's when there is one. */
function lockoutsFor(
  services: LockoutServices,
  method: CodeMethod,
  identityId: string,
  source: string | undefined,
): Array<{ lockout: Lockout; subject: string }> {
  const { limits } = services.config;
  const make = (threshold: number) =>
    new Lockout(services.state, { threshold, lockMs: limits.lockoutSeconds * 1000 }, services.now);
  const account = `${method}:${identityId}`;
  if (source === undefined) return [{ lockout: make(limits.lockoutThreshold), subject: account }];
  return [
    { lockout: make(limits.lockoutThreshold * ACCOUNT_WIDE_FACTOR), subject: account },
    { lockout: make(limits.lockoutThreshold), subject: `${account}:from:${source}` },
  ];
}

function lockedOut(method: CodeMethod, retryAfterMs: number): KeyplaneError {
  const seconds = retryAfterSeconds(retryAfterMs);
  const what = method === 'totp' ? 'TOTP codes' : 'recovery codes';
  return fail('locked_out', `too many wrong ${what}; try again in ${Math.ceil(seconds / 60)} minute(s)`, {
    headers: { 'retry-after': String(seconds) },
    fields: { retryAfter: seconds },
  });
}

/** Throws `locked_out` (429, Retry-After) while the account (or the account from this source) is locked for this method. */
export async function assertNotLocked(
  services: LockoutServices,
  method: CodeMethod,
  identityId: string,
  source?: string,
): Promise<void> {
  const [account, fromSource] = lockoutsFor(services, method, identityId, source);
  if (fromSource) {
    const own = await fromSource.lockout.status(fromSource.subject);
    if (own.locked) throw lockedOut(method, own.retryAfterMs);
  }
  const status = await account!.lockout.status(account!.subject);
  if (!status.locked) return;
  // With 80-bit backup codes the account-wide lock guards nothing the count of addresses does
  // not: it refuses only the sources that guessed wrong, never a clean one (the owner's).
  if (!fromSource || (await fromSource.lockout.failures(fromSource.subject)) > 0)
    throw lockedOut(method, status.retryAfterMs);
}

/**
 * Counts one wrong code. Returns the `locked_out` error to throw when this failure locked the
 * account (recording `lockout.started` once, for the failure that started it), else null.
 */
export async function recordCodeFailure(
  services: LockoutServices,
  method: CodeMethod,
  identityId: string,
  source?: string,
): Promise<KeyplaneError | null> {
  let locked: KeyplaneError | null = null;
  for (const { lockout, subject } of lockoutsFor(services, method, identityId, source)) {
    const result = await lockout.recordFailure(subject);
    if (result.started) {
      const at = services.now();
      await services.storage.transaction((tx) =>
        services.events.record(tx, {
          type: 'lockout.started',
          at,
          outcome: 'failure',
          identityId,
          method,
          until: at + result.retryAfterMs,
        }),
      );
    }
    if (result.locked) locked ??= lockedOut(method, result.retryAfterMs);
  }
  return locked;
}

export async function recordCodeSuccess(
  services: LockoutServices,
  method: CodeMethod,
  identityId: string,
  source?: string,
): Promise<void> {
  for (const { lockout, subject } of lockoutsFor(services, method, identityId, source))
    await lockout.recordSuccess(subject);
}
