import { fail } from '../errors/keyplane-error.js';
import {
  CORE_GROUP,
  CORE_USER,
  ENTERPRISE_USER,
  GROUP_SHAPE,
  USER_SHAPE,
  getIgnoringCase,
  isObject,
  setIgnoringCase,
  type ResourceShape,
} from './attribute-path.js';
import { withVersion } from './etag.js';

/** SCIM resources as JSON (RFC 7643 §4), the list response and the error message (RFC 7644 §3.4.2, §3.12). */

export const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const ERROR_MESSAGE = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const SCIM_MEDIA_TYPE = 'application/scim+json';

/** Attributes the server sets: never taken from a request body. */
const SERVER_SET = new Set(['id', 'meta', 'schemas']);

/**
 * The resource's attributes under their canonical names; unknown attributes, and those the
 * server sets, are dropped (RFC 7644 §3.3: the server ignores what it does not know).
 */
export function canonicalAttributes(body: Record<string, unknown>, shape: ResourceShape): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    const name = shape.attributes.get(key.toLowerCase());
    if (name && !SERVER_SET.has(name) && value !== undefined) out[name] = value;
  }
  return out;
}

/** Entra ID sends booleans as the strings "True" and "False". */
export function readBoolean(value: unknown, name: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw fail('scim_invalid_value', `${name} must be a boolean`);
}

function optionalString(value: unknown, name: string, max: number): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string' || value.length > max)
    throw fail('scim_invalid_value', `${name} must be a string of at most ${max} characters`);
  return value;
}

export interface UserFields {
  userName: string;
  externalId: string | null;
  active: boolean;
  /** Everything else, canonical and checked (name, displayName, emails, the enterprise extension, …). */
  attributes: Record<string, unknown>;
}

export interface ScimEmail {
  value: string;
  type?: string;
  primary?: boolean;
}

/** Checks a User resource (as sent, or after a PATCH) and splits out what is stored apart. */
export function readUser(resource: Record<string, unknown>): UserFields {
  const attributes = canonicalAttributes(resource, USER_SHAPE);
  const userName = optionalString(attributes.userName, 'userName', 256)?.trim();
  if (!userName) throw fail('scim_invalid_value', 'userName is required');
  const externalId = optionalString(attributes.externalId, 'externalId', 256);
  const active =
    attributes.active === undefined || attributes.active === null ? true : readBoolean(attributes.active, 'active');
  delete attributes.userName;
  delete attributes.externalId;
  delete attributes.active;
  if (attributes.displayName !== undefined) optionalString(attributes.displayName, 'displayName', 256);
  if (attributes.name !== undefined && attributes.name !== null && !isObject(attributes.name))
    throw fail('scim_invalid_value', 'name must be an object');
  for (const multi of USER_SHAPE.multiValued) {
    const list = attributes[multi];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list) || !list.every(isObject))
      throw fail('scim_invalid_value', `${multi} must be an array of objects`);
    for (const element of list)
      if ('primary' in element) element.primary = readBoolean(element.primary, `${multi}.primary`);
  }
  const emails = (attributes.emails ?? []) as Record<string, unknown>[];
  for (const email of emails) {
    const value = getIgnoringCase(email, 'value');
    if (typeof value !== 'string' || !/^[^\s@]+@[^\s@]+$/.test(value) || value.length > 254)
      throw fail('scim_invalid_value', 'emails[].value must be an e-mail address');
  }
  const enterprise = attributes[ENTERPRISE_USER];
  if (enterprise !== undefined && enterprise !== null && !isObject(enterprise))
    throw fail('scim_invalid_value', 'the enterprise extension must be an object');
  // Entra ID sends the manager as its id alone; RFC 7643 §4.3 makes it complex: `{value}`.
  const manager = isObject(enterprise) ? getIgnoringCase(enterprise, 'manager') : undefined;
  if (typeof manager === 'string')
    setIgnoringCase(enterprise as Record<string, unknown>, 'manager', { value: manager });
  return { userName, externalId, active, attributes };
}

/** The addresses of a User resource, lower-cased. */
export function emailsOf(attributes: Record<string, unknown>): string[] {
  const list = Array.isArray(attributes.emails) ? attributes.emails : [];
  return [
    ...new Set(
      list
        .filter(isObject)
        .map((e) => getIgnoringCase(e, 'value'))
        .filter((v): v is string => typeof v === 'string')
        .map((v) => v.toLowerCase()),
    ),
  ];
}

export interface Meta {
  resourceType: 'User' | 'Group';
  created: number;
  lastModified: number;
  location: string;
}

const metaOf = (meta: Meta) => ({
  resourceType: meta.resourceType,
  created: new Date(meta.created).toISOString(),
  lastModified: new Date(meta.lastModified).toISOString(),
  location: meta.location,
});

export function userResource(id: string, fields: UserFields, meta: Meta): Record<string, unknown> {
  const { attributes } = fields;
  return withVersion({
    schemas: attributes[ENTERPRISE_USER] ? [CORE_USER, ENTERPRISE_USER] : [CORE_USER],
    id,
    ...(fields.externalId !== null ? { externalId: fields.externalId } : {}),
    userName: fields.userName,
    ...attributes,
    active: fields.active,
    meta: metaOf(meta),
  });
}

export function groupResource(
  id: string,
  group: { displayName: string; externalId?: string | null; members: Array<{ value: string; display?: string }> },
  meta: Meta,
): Record<string, unknown> {
  return withVersion({
    schemas: [CORE_GROUP],
    id,
    ...(group.externalId ? { externalId: group.externalId } : {}),
    displayName: group.displayName,
    members: group.members.map((m) => ({
      value: m.value,
      $ref: `${meta.location.replace(/\/Groups\/[^/]+$/, '')}/Users/${m.value}`,
      ...(m.display ? { display: m.display } : {}),
    })),
    meta: metaOf(meta),
  });
}

/** The member ids of a Group resource as sent. */
export function memberIdsOf(resource: Record<string, unknown>): string[] {
  const members = getIgnoringCase(resource, 'members');
  if (members === undefined || members === null) return [];
  if (!Array.isArray(members)) throw fail('scim_invalid_value', 'members must be an array');
  return [
    ...new Set(
      members.map((m) => {
        const value = isObject(m) ? getIgnoringCase(m, 'value') : undefined;
        if (typeof value !== 'string') throw fail('scim_invalid_value', 'members[].value must be a user id');
        return value;
      }),
    ),
  ];
}

/** The externalId of a Group resource (case-exact, as Entra ID and Okta send it), or null. */
export function groupExternalId(resource: Record<string, unknown>): string | null {
  return optionalString(getIgnoringCase(resource, 'externalId'), 'externalId', 256);
}

/** The displayName of a Group resource: kept exactly as sent. */
export function groupDisplayName(resource: Record<string, unknown>): string {
  const displayName = getIgnoringCase(resource, 'displayName');
  if (typeof displayName !== 'string' || displayName.trim() === '' || displayName.length > 200)
    throw fail('scim_invalid_value', 'displayName is required (at most 200 characters)');
  return displayName;
}

/** `attributes` / `excludedAttributes` (RFC 7644 §3.4.2.5): `id` and `schemas` always stay. */
export function projectAttributes(
  resource: Record<string, unknown>,
  attributes: string | undefined,
  excluded: string | undefined,
): Record<string, unknown> {
  const list = (text: string | undefined) =>
    (text ?? '')
      .split(',')
      .map((a) => a.trim())
      .filter((a) => a !== '')
      .map((a) => a.replace(/^urn:ietf:params:scim:schemas:core:2\.0:(User|Group):/i, ''));
  const wanted = list(attributes);
  const dropped = list(excluded);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(resource)) {
    const lower = key.toLowerCase();
    const always = key === 'id' || key === 'schemas';
    if (wanted.length > 0 && !always) {
      const subs = wanted.filter((w) => w.toLowerCase().startsWith(`${lower}.`)).map((w) => w.slice(key.length + 1));
      if (wanted.some((w) => w.toLowerCase() === lower)) out[key] = value;
      else if (subs.length > 0 && isObject(value))
        out[key] = Object.fromEntries(
          Object.entries(value).filter(([k]) => subs.some((s) => s.toLowerCase() === k.toLowerCase())),
        );
      else if (subs.length > 0 && Array.isArray(value))
        out[key] = value
          .filter(isObject)
          .map((e) =>
            Object.fromEntries(
              Object.entries(e).filter(([k]) => subs.some((s) => s.toLowerCase() === k.toLowerCase())),
            ),
          );
      continue;
    }
    if (!always && dropped.some((d) => d.toLowerCase() === lower)) continue;
    out[key] = value;
  }
  return out;
}

/** `startIndex` and `count` (RFC 7644 §3.4.2.4): 1-based; less than 1 counts as 1, a negative count as 0. */
export function readPaging(
  query: { startIndex?: unknown; count?: unknown },
  maxCount: number,
): { startIndex: number; count: number } {
  const int = (value: unknown, fallback: number) => {
    if (value === undefined || value === '') return fallback;
    const n = Number(value);
    if (!Number.isInteger(n)) throw fail('scim_invalid_value', 'startIndex and count must be integers');
    return n;
  };
  return {
    startIndex: Math.max(1, int(query.startIndex, 1)),
    count: Math.min(maxCount, Math.max(0, int(query.count, maxCount))),
  };
}

export function listResponse(
  all: Record<string, unknown>[],
  paging: { startIndex: number; count: number },
  project: (r: Record<string, unknown>) => Record<string, unknown>,
): Record<string, unknown> {
  const page = all.slice(paging.startIndex - 1, paging.startIndex - 1 + paging.count).map(project);
  return {
    schemas: [LIST_RESPONSE],
    totalResults: all.length,
    startIndex: paging.startIndex,
    itemsPerPage: page.length,
    Resources: page,
  };
}

/** A list response of a page the store read already (`page`), of `total` resources in all. */
export function pageResponse(
  page: Record<string, unknown>[],
  total: number,
  startIndex: number,
  project: (r: Record<string, unknown>) => Record<string, unknown>,
): Record<string, unknown> {
  return {
    schemas: [LIST_RESPONSE],
    totalResults: total,
    startIndex,
    itemsPerPage: page.length,
    Resources: page.map(project),
  };
}

export { USER_SHAPE, GROUP_SHAPE };
