import { fail } from '#lib/errors/keyplane-error.js';
import { RateLimiter } from '#lib/runtime/security/rate-limiter.js';
import type { ControlPlaneServices } from '../context.js';

/** What these functions read: the rate limits live in shared state. Lockouts: lockouts/code-lockout.ts. */
export type GuardServices = Pick<ControlPlaneServices, 'config' | 'state'>;

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
