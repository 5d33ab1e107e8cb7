import { fail, type KeyplaneError } from '../../../lib/errors/keyplane-error.js';
import { Lockout } from '../../../lib/runtime/security/lockout.js';
import { RateLimiter } from '../../../lib/runtime/security/rate-limiter.js';
import type { ControlPlaneServices } from '../context.js';

/** What these functions read. */
export type GuardServices = Pick<ControlPlaneServices, 'config' | 'state' | 'storage' | 'events' | 'now'>;

/**
 * Guessing protection shared by the code-checking routes (TOTP, recovery codes): a lockout per
 * account and method after `limits.lockoutThreshold` failures for `limits.lockoutSeconds`
 * (docs/accounts.md#rate-limits), and a per-IP rate limit. A lockout start is an event (and so a receipt).
 */
export type CodeMethod = 'totp' | 'recovery';

function lockout(services: GuardServices): Lockout {
  const { limits } = services.config;
  return new Lockout(
    services.state,
    { threshold: limits.lockoutThreshold, lockMs: limits.lockoutSeconds * 1000 },
    services.now,
  );
}

function subject(method: CodeMethod, identityId: string): string {
  return `${method}:${identityId}`;
}

function lockedOut(method: CodeMethod, retryAfterMs: number): KeyplaneError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const what = method === 'totp' ? 'TOTP codes' : 'recovery codes';
  return fail('locked_out', `too many wrong ${what}; try again in ${Math.ceil(seconds / 60)} minute(s)`, {
    headers: { 'retry-after': String(seconds) },
    fields: { retryAfter: seconds },
  });
}

/** Throws `locked_out` (429, Retry-After) while the account is locked for this method. */
export async function assertNotLocked(services: GuardServices, method: CodeMethod, identityId: string): Promise<void> {
  const status = await lockout(services).status(subject(method, identityId));
  if (status.locked) throw lockedOut(method, status.retryAfterMs);
}

/**
 * Counts one wrong code. Returns the `locked_out` error to throw when this failure locked the
 * account (recording `lockout.started` once, for the failure that started it), else null.
 */
export async function recordCodeFailure(
  services: GuardServices,
  method: CodeMethod,
  identityId: string,
): Promise<KeyplaneError | null> {
  const result = await lockout(services).recordFailure(subject(method, identityId));
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
  return result.locked ? lockedOut(method, result.retryAfterMs) : null;
}

export async function recordCodeSuccess(
  services: GuardServices,
  method: CodeMethod,
  identityId: string,
): Promise<void> {
  await lockout(services).recordSuccess(subject(method, identityId));
}

/** Per client IP, `limits.authPerIpPerMinute` requests per minute on one credential path. */
export async function limitPerIp(services: GuardServices, request: { ip: string }, bucket: string): Promise<void> {
  const decision = await new RateLimiter(services.state).hit(bucket, request.ip, {
    max: services.config.limits.authPerIpPerMinute,
    windowMs: 60_000,
  });
  if (!decision.allowed) {
    const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    throw fail('rate_limited', 'too many attempts from this address; slow down', {
      headers: { 'retry-after': String(seconds) },
    });
  }
}

/** Per account name, `limits.authPerAccountPerMinute` attempts per minute (unknown names count alike). */
export async function limitPerAccount(services: GuardServices, bucket: string, subject: string): Promise<void> {
  const decision = await new RateLimiter(services.state).hit(bucket, subject, {
    max: services.config.limits.authPerAccountPerMinute,
    windowMs: 60_000,
  });
  if (!decision.allowed) {
    const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    throw fail('rate_limited', 'too many attempts for this account; slow down', {
      headers: { 'retry-after': String(seconds) },
    });
  }
}
