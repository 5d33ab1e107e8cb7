import type { Reason } from '../errors/reasons.js';
import { ERROR_MESSAGE } from './resources.js';

/** RFC 7644 §3.12: the `scimType` of each refusal that has one. */
const SCIM_TYPES: Partial<Record<Reason, string>> = {
  scim_invalid_filter: 'invalidFilter',
  scim_invalid_value: 'invalidValue',
  scim_invalid_path: 'invalidPath',
  scim_no_target: 'noTarget',
  scim_uniqueness: 'uniqueness',
  scim_mutability: 'mutability',
  scim_invalid_syntax: 'invalidSyntax',
  invalid_request: 'invalidSyntax',
};

/**
 * The SCIM error message (RFC 7644 §3.12) for a refusal: `status` as a string, `scimType` where
 * the RFC names one, `detail` the refusal's message. It travels beside the envelope's members.
 */
export function scimErrorFor(failure: { reason: Reason; status: number; message: string }): Record<string, unknown> {
  const scimType = SCIM_TYPES[failure.reason];
  return {
    schemas: [ERROR_MESSAGE],
    status: String(failure.status),
    ...(scimType ? { scimType } : {}),
    detail: failure.message,
  };
}
