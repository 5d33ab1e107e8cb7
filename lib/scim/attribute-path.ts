import { fail } from '../errors/keyplane-error.js';

/** SCIM attribute names and paths (RFC 7643 §2.1, RFC 7644 §3.10): case-insensitive, URN-qualified or not. */

export const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const CORE_GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_USER = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

/** A resource type's attributes: canonical names by lower-cased name, which are multi-valued, and its extensions. */
export interface ResourceShape {
  core: string;
  attributes: ReadonlyMap<string, string>;
  multiValued: ReadonlySet<string>;
  extensions: readonly string[];
  /** Compared exactly (RFC 7643 `caseExact`); every other string attribute ignores case. */
  caseExact: ReadonlySet<string>;
}

const shape = (core: string, names: string[], multi: string[], extensions: string[]): ResourceShape => ({
  core,
  attributes: new Map([...names, ...extensions].map((n) => [n.toLowerCase(), n])),
  multiValued: new Set(multi),
  extensions,
  caseExact: new Set(['id', 'externalId', 'value']),
});

export const USER_SHAPE = shape(
  CORE_USER,
  [
    'id',
    'externalId',
    'userName',
    'name',
    'displayName',
    'nickName',
    'profileUrl',
    'title',
    'userType',
    'preferredLanguage',
    'locale',
    'timezone',
    'active',
    'emails',
    'phoneNumbers',
    'ims',
    'photos',
    'addresses',
    'roles',
    'entitlements',
    'x509Certificates',
    'meta',
  ],
  ['emails', 'phoneNumbers', 'ims', 'photos', 'addresses', 'roles', 'entitlements', 'x509Certificates'],
  [ENTERPRISE_USER],
);

export const GROUP_SHAPE = shape(CORE_GROUP, ['id', 'externalId', 'displayName', 'members', 'meta'], ['members'], []);

/** A parsed attribute path: `emails[type eq "work"].value` is `{attribute: 'emails', filter, sub: 'value'}`. */
export interface AttributePath {
  /** Canonical top-level name, or an extension's URN. */
  attribute: string;
  /** Inside an extension: its attribute (`manager`), else null. */
  extensionAttribute: string | null;
  /** The value filter's text between the brackets, or null. */
  filter: string | null;
  /** The sub-attribute after the dot (`givenName`, `value`), as sent; null for none. */
  sub: string | null;
}

/** Strips a schema URN prefix: `urn:…:core:2.0:User:userName` is `userName`; an extension URN stays with its attribute. */
export function parseAttributePath(raw: string, resource: ResourceShape): AttributePath {
  const text = raw.trim();
  const lower = text.toLowerCase();
  let rest = text;
  let extension: string | null = null;
  if (lower.startsWith(`${resource.core.toLowerCase()}:`)) rest = text.slice(resource.core.length + 1);
  else {
    extension = resource.extensions.find((urn) => lower.startsWith(urn.toLowerCase())) ?? null;
    if (extension) rest = text.slice(extension.length).replace(/^:/, '');
  }
  const match = /^([A-Za-z$][\w$-]*)?(?:\[(.*)\])?(?:\.([A-Za-z$][\w$-]*))?$/s.exec(rest);
  if (!match || (!match[1] && !extension))
    throw fail('scim_invalid_path', `the path ${JSON.stringify(raw)} is not valid`);
  if (extension) {
    if (match[2] !== undefined) throw fail('scim_invalid_path', 'value filters are not taken inside an extension');
    return { attribute: extension, extensionAttribute: match[1] ?? null, filter: null, sub: match[3] ?? null };
  }
  const attribute = resource.attributes.get(match[1]!.toLowerCase());
  if (!attribute) throw fail('scim_invalid_path', `this resource has no attribute ${JSON.stringify(match[1])}`);
  return { attribute, extensionAttribute: null, filter: match[2] ?? null, sub: match[3] ?? null };
}

/** The value of `key` in `object`, the key matched without regard to case. */
export function getIgnoringCase(object: Record<string, unknown>, key: string): unknown {
  if (key in object) return object[key];
  const lower = key.toLowerCase();
  const found = Object.keys(object).find((k) => k.toLowerCase() === lower);
  return found === undefined ? undefined : object[found];
}

/** Sets `key` in `object`, replacing a key that differs only in case. */
export function setIgnoringCase(object: Record<string, unknown>, key: string, value: unknown): void {
  const lower = key.toLowerCase();
  for (const k of Object.keys(object)) if (k.toLowerCase() === lower && k !== key) delete object[k];
  object[key] = value;
}

export function deleteIgnoringCase(object: Record<string, unknown>, key: string): void {
  const lower = key.toLowerCase();
  for (const k of Object.keys(object)) if (k.toLowerCase() === lower) delete object[k];
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
