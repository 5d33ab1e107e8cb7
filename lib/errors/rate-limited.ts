import { KeyplaneError } from './keyplane-error.js';

/** `Retry-After` in whole seconds (RFC 9110 §10.2.3), never 0: a client told 0 would ask again at once. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/**
 * The one way a request is refused for going over a limit: 429 `rate_limited` with `Retry-After`.
 * `fields` adds to the envelope (the token endpoint's RFC 6749 `slow_down` pair).
 */
export function rateLimited(
  retryAfterMs: number,
  message: string,
  options: { fields?: Record<string, unknown> } = {},
): KeyplaneError {
  return new KeyplaneError('rate_limited', message, {
    headers: { 'retry-after': String(retryAfterSeconds(retryAfterMs)) },
    ...(options.fields ? { fields: options.fields } : {}),
  });
}

/** Throws `rateLimited` when a limiter refused the hit (`RateLimiter.hit`'s decision). */
export function enforceLimit(
  decision: { allowed: boolean; retryAfterMs: number },
  message: string,
  options: { fields?: Record<string, unknown> } = {},
): void {
  if (!decision.allowed) throw rateLimited(decision.retryAfterMs, message, options);
}
