import { sha256 } from '../crypto/sha256.js';
import { fail } from '../errors/keyplane-error.js';

/**
 * Versions of SCIM resources (RFC 7644 §3.14): a weak entity tag made of the resource as served,
 * so that any change to what a client reads (a member added to a Group, an attribute, `active`)
 * changes it, and nothing else does. No version is stored.
 */

/** The version of `resource` (its `meta.version` left out): `W/"<22 base64url characters>"`. */
export function resourceVersion(resource: Record<string, unknown>): string {
  const { meta, ...rest } = resource;
  const { version: _version, ...plainMeta } = (meta ?? {}) as Record<string, unknown>;
  const digest = sha256(JSON.stringify({ ...rest, meta: plainMeta }))
    .subarray(0, 16)
    .toString('base64url');
  return `W/"${digest}"`;
}

/** `resource` with `meta.version` set. */
export function withVersion(resource: Record<string, unknown>): Record<string, unknown> {
  return { ...resource, meta: { ...(resource.meta as object), version: resourceVersion(resource) } };
}

/** The opaque part of an entity tag, weak or strong: `W/"x"` and `"x"` compare equal (RFC 9110 §8.8.3.2, weak comparison). */
const opaque = (tag: string) => tag.trim().replace(/^W\//, '');

/**
 * Whether an `If-Match` / `If-None-Match` header names `version`: `*` names any, a list names
 * each of its tags. Both compare weakly: the versions are weak, and Entra ID and Okta send them back as read.
 */
export function etagMatches(header: string, version: string): boolean {
  const tags = header.split(',').map((t) => t.trim());
  return tags.some((t) => t === '*' || opaque(t) === opaque(version));
}

/** RFC 7644 §3.14: a write whose `If-Match` does not name the resource's version is refused (412). */
export function checkIfMatch(header: string | undefined, resource: Record<string, unknown>): void {
  if (header === undefined || header === '') return;
  if (!etagMatches(header, resourceVersion(resource)))
    throw fail('scim_precondition_failed', 'the resource changed since this version was read (If-Match)');
}
