/**
 * Every `reason` an envelope can carry, with its HTTP status and meaning. docs/errors.md is
 * generated from this table (`npm run docs`) and a test keeps the two in step.
 * Add a reason here before throwing it anywhere.
 */
export const REASONS = {
  // generic HTTP
  invalid_request: { status: 400, description: 'The request is malformed: bad JSON, a schema violation, a missing or invalid field.' },
  unauthorized: { status: 401, description: 'No valid credential (session, token or admin token) came with the request.' },
  forbidden: { status: 403, description: 'The caller is known but may not do this.' },
  not_found: { status: 404, description: 'No such resource, or one the caller may not know exists.' },
  method_not_allowed: { status: 405, description: 'The path exists but not with this method.' },
  conflict: { status: 409, description: 'The request conflicts with the current state.' },
  payload_too_large: { status: 413, description: 'The body is larger than `http.bodyLimit`.' },
  unsupported_media_type: { status: 415, description: 'The body is neither JSON nor, where documented, form data.' },
  rate_limited: { status: 429, description: 'Too many requests from this address or for this account; `Retry-After` says when to try again.' },
  internal: { status: 500, description: 'The server failed; the request id in `x-request-id` identifies it in the logs.' },
  not_ready: { status: 503, description: 'Storage, keys or shared state are not ready yet.' },
  // credentials and lockout
  locked_out: { status: 429, description: 'Too many wrong codes for this account and method; locked until `Retry-After`.' },
  origin_mismatch: { status: 403, description: 'A state-changing request came from an origin other than the issuer (or a registered one).' },
} as const satisfies Record<string, { status: number; description: string }>;

export type Reason = keyof typeof REASONS;

export function statusOf(reason: Reason): number {
  return REASONS[reason].status;
}
