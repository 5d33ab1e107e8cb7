/**
 * Every `reason` an envelope can carry, with its HTTP status. docs/errors.md lists them as a
 * table; a test keeps the two in step. Add a reason here before throwing it anywhere.
 */
export const REASONS = {
  // generic HTTP
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  not_ready: 503,
  // credentials and lockout
  locked_out: 429,
  origin_mismatch: 403,
} as const satisfies Record<string, number>;

export type Reason = keyof typeof REASONS;

export function statusOf(reason: Reason): number {
  return REASONS[reason];
}
