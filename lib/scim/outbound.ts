import { oauthError } from '../oauth/errors.js';
import { CORE_GROUP, CORE_USER, isObject } from './attribute-path.js';
import { LIST_RESPONSE } from './resources.js';
import { PATCH_OP } from './patch.js';

/**
 * Outbound SCIM (docs/scim.md#outbound-scim): what Keyplane sends to a client's SCIM server
 * (RFC 7643 resources, RFC 7644 requests), which receipts make it push whom, and the client
 * metadata member `scim` that names the server. Pure: the control plane does the fetching.
 */

/** A client's SCIM server as its metadata names it. */
export interface ScimTargetInput {
  baseUrl: string;
  token: string;
}

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'];
const TOKEN = /^[\x21-\x7e]{1,4096}$/;

function bad(message: string): never {
  throw oauthError('invalid_client_metadata', message);
}

/**
 * The client metadata member `scim: {base_url, token}`: undefined when absent (the target is
 * kept), null to remove it. `base_url` is https (plain http only on a loopback host, where the
 * guarded fetcher still decides), without credentials, query or fragment; the token is one
 * header-safe string.
 */
export function readScimTarget(value: unknown): ScimTargetInput | null | undefined {
  if (value === undefined) return undefined;
  if (value === null) return null;
  if (!isObject(value)) bad('scim must be {"base_url": "https://…", "token": "…"} or null');
  const { base_url: baseUrl, token } = value;
  if (typeof baseUrl !== 'string' || baseUrl.length > 2000) bad('scim.base_url must be a URL');
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    bad('scim.base_url must be an absolute URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.includes(url.hostname)))
    bad('scim.base_url must use https');
  if (url.username || url.password || url.search || url.hash)
    bad('scim.base_url must carry no credentials, query or fragment');
  if (typeof token !== 'string' || !TOKEN.test(token))
    bad('scim.token must be the bearer token the SCIM server gave: 1 to 4096 visible ASCII characters');
  return { baseUrl: url.href.replace(/\/+$/, ''), token };
}

/** What Keyplane states about one account at a client's SCIM server. */
export interface OutboundUser {
  userName: string;
  /** The account's `sub` at that client (its identity id). */
  externalId: string;
  displayName?: string;
  /** A verified address the client may receive; absent otherwise. */
  email?: string;
}

/** RFC 7643 §4.1: the User resource of an account that may sign in to the client (always active). */
export function outboundUser(user: OutboundUser): Record<string, unknown> {
  return {
    schemas: [CORE_USER],
    userName: user.userName,
    externalId: user.externalId,
    active: true,
    ...(user.displayName ? { displayName: user.displayName } : {}),
    ...(user.email ? { emails: [{ value: user.email, type: 'work', primary: true }] } : {}),
  };
}

/** RFC 7644 §3.5.2: deprovisioning as directories do it, `active` replaced by false. */
export function deactivation(): Record<string, unknown> {
  return { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] };
}

/** RFC 7643 §4.2: a team as a Group, its members named by the remote ids of their users. */
export function outboundGroup(group: {
  displayName: string;
  externalId: string;
  memberIds: readonly string[];
}): Record<string, unknown> {
  return {
    schemas: [CORE_GROUP],
    displayName: group.displayName,
    externalId: group.externalId,
    members: group.memberIds.map((value) => ({ value })),
  };
}

/** RFC 7644 §3.4.2.2: `attribute eq "value"`, the value a JSON string. */
export function equalityFilter(attribute: 'userName' | 'externalId' | 'displayName', value: string): string {
  return `${attribute} eq ${JSON.stringify(value)}`;
}

/** The `id` of the first resource of a list response (RFC 7644 §3.4.2), or null when it lists none. */
export function firstListedId(body: unknown): string | null {
  if (!isObject(body)) return null;
  const schemas = body.schemas;
  if (Array.isArray(schemas) && !schemas.includes(LIST_RESPONSE)) return null;
  const first = Array.isArray(body.Resources) ? (body.Resources as unknown[])[0] : undefined;
  return isObject(first) && typeof first.id === 'string' && first.id !== '' ? first.id : null;
}

/** The `id` a created resource came back with (RFC 7644 §3.3), or null. */
export function createdId(body: unknown): string | null {
  return isObject(body) && typeof body.id === 'string' && body.id !== '' ? body.id : null;
}

/** What a receipt asks to push again: accounts, teams, a whole client, or that client's target gone. */
export interface PushSubjects {
  users: string[];
  groups: string[];
  /** Only to this client (a consent to it), or to every client whose orgs the receipt's `orgId` is among. */
  clientId?: string;
  orgId?: string;
  reconcile?: string;
  removed?: string;
}

/** Receipts that change whether (or as what) an account is pushed. */
const USER_KINDS = new Set([
  'account.renamed',
  'account.disabled',
  'account.enabled',
  'account.deleted',
  'email.verified',
  'consent.approved',
  'consent.revoked',
  'org.member_joined',
  'org.member_role_changed',
  'org.member_removed',
  'team.member_added',
  'team.member_removed',
  'scim.user_created',
  'scim.user_updated',
  'scim.user_suspended',
  'scim.user_reactivated',
  'scim.user_deleted',
  'federation.account_created',
  'federation.account_linked',
]);

/** Receipts that change a team as a Group: its name, its members, or its end. */
const GROUP_KINDS = new Set([
  'team.created',
  'team.renamed',
  'team.deleted',
  'team.member_added',
  'team.member_removed',
  'scim.group_created',
  'scim.group_updated',
  'scim.group_deleted',
]);

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * What a receipt makes Keyplane push (every push recomputes the subject's state, so a receipt
 * only needs to name whom): none for its own `scim.outbound.*` receipts.
 */
export function pushSubjectsOf(receipt: { kind: string } & Record<string, unknown>): PushSubjects | null {
  const { kind } = receipt;
  if (kind.startsWith('scim.outbound.')) return null;
  const clientId = text(receipt.clientId);
  if (kind === 'client.updated' && clientId) return { users: [], groups: [], reconcile: clientId };
  if (kind === 'client.deleted' && clientId) return { users: [], groups: [], removed: clientId };
  // An OIDC approval is part of the code's receipt (docs/events.md): a new one opens the consent gate.
  if (kind === 'authorization.code_issued') {
    const identity = text(receipt.identityId);
    return receipt.approval === 'new' && clientId && identity ? { users: [identity], groups: [], clientId } : null;
  }
  const identityId = USER_KINDS.has(kind) ? text(receipt.identityId) : undefined;
  const teamId = GROUP_KINDS.has(kind) ? text(receipt.teamId) : undefined;
  if (!identityId && !teamId) return null;
  const orgId = text(receipt.orgId);
  const party = kind.startsWith('consent.') ? text(receipt.party) : undefined;
  return {
    users: identityId ? [identityId] : [],
    groups: teamId ? [teamId] : [],
    ...(party ? { clientId: party } : {}),
    ...(orgId ? { orgId } : {}),
  };
}
