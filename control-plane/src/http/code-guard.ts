import { enforceLimit } from '#lib/errors/rate-limited.js';
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
  enforceLimit(decision, 'too many attempts from this address; slow down');
}

/** Per account name, `limits.authPerAccountPerMinute` attempts per minute (unknown names count alike). */
export async function limitPerAccount(services: GuardServices, bucket: string, subject: string): Promise<void> {
  const decision = await new RateLimiter(services.state).hit(bucket, subject, {
    max: services.config.limits.authPerAccountPerMinute,
    windowMs: 60_000,
  });
  enforceLimit(decision, 'too many attempts for this account; slow down');
}
