import { createHmac } from 'node:crypto';
import { fail } from '#lib/errors/keyplane-error.js';
import { randomHex, randomId } from '#lib/crypto/random.js';
import { addressInDomains } from '#lib/orgs/mail-domain.js';
import { DISPLAY_NAME_MAX } from '#lib/accounts/username.js';
import { USER_SHAPE, isObject } from '#lib/scim/attribute-path.js';
import { checkIfMatch } from '#lib/scim/etag.js';
import { equalityOn, matchesFilter, parseScimFilter } from '#lib/scim/filter.js';
import {
  emailsOf,
  listResponse,
  pageResponse,
  projectAttributes,
  readPaging,
  readUser,
  userResource,
  type UserFields,
} from '#lib/scim/resources.js';
import type { ControlPlaneServices } from '../context.js';
import type { Actor } from '../events/types.js';
import type { ScimUserRecord, Stores } from '../storage/interface.js';
import { deleteAccountIn, suspendAccountIn } from '../accounts/lifecycle.js';
import { issueEnrolmentFor, issueEnrolmentIn } from '../passkeys/enrolment.js';
import type { ScimCaller } from './tokens.js';

/**
 * SCIM Users of an org (docs/scim.md#users): each is an account the org manages. The Keyplane
 * username is generated; the SCIM `userName` is kept per org. Addresses within the org's proved
 * mail domains are verified, others stay unverified (and so are never mailed). `active: false`
 * suspends the account; DELETE deletes it.
 */

export type ScimServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now' | 'secrets' | 'config' | 'mailer'>;

/** What a list, a read or a write answers with: the query's `attributes` / `excludedAttributes`. */
export interface Projection {
  attributes?: string;
  excludedAttributes?: string;
}

export interface ListQuery extends Projection {
  filter?: string;
  startIndex?: string;
  count?: string;
}

/** The most resources one list answers (ServiceProviderConfig `filter.maxResults`). */
export const MAX_RESULTS = 1000;

/** `userName` is not case-exact (RFC 7643 §4.1.1): unique per org once folded. */
export const foldUserName = (userName: string): string => userName.normalize('NFC').toLowerCase();

const actorOf = (caller: ScimCaller): Actor => ({ type: 'scim_token', id: caller.tokenId });

export function usersBase(services: Pick<ControlPlaneServices, 'config'>, slug: string): string {
  return `${services.config.issuer}/scim/v2/orgs/${encodeURIComponent(slug)}`;
}

/** The opaque name of a userName in receipts: HMAC-SHA-256 under a key of its own, per org. */
export function userNameHash(services: Pick<ScimServices, 'secrets'>, orgId: string, userName: string): string {
  return createHmac('sha256', services.secrets.macKey('scim-user-name'))
    .update(`${orgId}\n${foldUserName(userName)}`)
    .digest('hex');
}

/** `active` is the org's own flag: an operator's pause is apart and not shown here. */
function fieldsOf(record: ScimUserRecord): UserFields {
  return {
    userName: record.userName,
    externalId: record.externalId,
    active: (record.suspendedAt ?? null) === null,
    attributes: record.attributes,
  };
}

function resourceOf(services: ScimServices, caller: ScimCaller, record: ScimUserRecord) {
  return userResource(record.identityId, fieldsOf(record), {
    resourceType: 'User',
    created: record.createdAt,
    lastModified: record.updatedAt,
    location: `${usersBase(services, caller.org.slug)}/Users/${record.identityId}`,
  });
}

/** The display name of the Keyplane account: SCIM `displayName`, else the name parts, else the userName. */
function accountDisplayName(fields: UserFields): string {
  const name = isObject(fields.attributes.name) ? fields.attributes.name : {};
  const parts = [name.givenName, name.familyName].filter((p) => typeof p === 'string' && p !== '').join(' ');
  const chosen = [fields.attributes.displayName, name.formatted, parts, fields.userName].find(
    (v): v is string => typeof v === 'string' && v.trim() !== '',
  )!;
  // Control characters never reach a page or a token.
  return chosen
    .replace(/\p{Cc}/gu, ' ')
    .trim()
    .slice(0, DISPLAY_NAME_MAX);
}

/**
 * The account's addresses become those of the resource: an address within one of the org's proved
 * mail domains is verified (unless another account verified it first), any other stays unverified.
 */
async function syncEmails(tx: Stores, orgId: string, identityId: string, wanted: string[], now: number) {
  const proved = (await tx.orgs.mailDomains(orgId)).filter((d) => d.verifiedAt !== null).map((d) => d.domain);
  for (const row of await tx.emails.listByIdentity(identityId))
    if (!wanted.includes(row.email)) await tx.emails.remove(identityId, row.emailId);
  for (const email of wanted) {
    const row = await tx.emails.add({ emailId: randomId('eml'), identityId, email, createdAt: now, verifiedAt: null });
    if (row.verifiedAt === null && addressInDomains(email, proved)) await tx.emails.markVerified(row.emailId, now);
  }
}

/** A Keyplane username for a provisioned account: the org's slug and 40 random bits. */
const generatedUsername = (slug: string) => `${slug.slice(0, 20).replace(/-+$/, '')}-${randomHex(5)}`;

async function recordUser(
  services: ScimServices,
  tx: Stores,
  caller: ScimCaller,
  type:
    'scim.user_created' | 'scim.user_updated' | 'scim.user_deleted' | 'scim.user_suspended' | 'scim.user_reactivated',
  identityId: string,
  userName: string,
): Promise<string | undefined> {
  const { receipt } = await services.events.record(tx, {
    type,
    at: services.now(),
    outcome: 'success',
    actor: actorOf(caller),
    orgId: caller.org.orgId,
    identityId,
    userNameHash: userNameHash(services, caller.org.orgId, userName),
  });
  return receipt;
}

const taken = () => fail('scim_uniqueness', 'the organization has a user with this userName already');

export async function createUser(
  services: ScimServices,
  caller: ScimCaller,
  body: unknown,
): Promise<{ resource: Record<string, unknown>; receipt?: string }> {
  if (!isObject(body)) throw fail('scim_invalid_syntax', 'the body must be a User resource');
  const fields = readUser(body);
  const { orgId, slug } = caller.org;
  const now = services.now();
  const created = await services.storage.transaction(async (tx) => {
    if (await tx.scim.userByName(orgId, foldUserName(fields.userName))) throw taken();
    const identityId = randomId('usr');
    let created = false;
    for (let attempt = 0; attempt < 5 && !created; attempt++)
      created = await tx.identities.create({
        identityId,
        username: generatedUsername(slug),
        displayName: accountDisplayName(fields),
        preferences: {},
        founder: false,
        managedBy: orgId,
        createdAt: now,
        updatedAt: now,
      });
    if (!created) throw fail('conflict', 'no free username was found; try again');
    await tx.orgs.addMember(orgId, { identityId, role: 'member', addedAt: now });
    const record: ScimUserRecord = {
      identityId,
      orgId,
      userName: fields.userName,
      userNameKey: foldUserName(fields.userName),
      externalId: fields.externalId,
      attributes: fields.attributes,
      createdAt: now,
      updatedAt: now,
    };
    if (!(await tx.scim.addUser(record))) throw taken();
    await syncEmails(tx, orgId, identityId, emailsOf(fields.attributes), now);
    if (!fields.active) await tx.identities.setSuspended(identityId, now);
    const receipt = await recordUser(services, tx, caller, 'scim.user_created', identityId, fields.userName);
    const language = fields.attributes.preferredLanguage;
    const mail = fields.active
      ? await issueEnrolmentFor(services, tx, {
          identityId,
          org: caller.org,
          actor: actorOf(caller),
          ...(typeof language === 'string' ? { language } : {}),
        })
      : null;
    return {
      resource: resourceOf(services, caller, { ...record, suspendedAt: fields.active ? null : now }),
      mail,
      ...(receipt ? { receipt } : {}),
    };
  });
  // Mailed once the account exists (the transaction landed), never waited for.
  if (created.mail) services.mailer.enqueue(created.mail);
  const { mail: _mail, ...answer } = created;
  return answer;
}

async function userOf(tx: Stores, caller: ScimCaller, id: string): Promise<ScimUserRecord> {
  const record = id.length <= 100 ? await tx.scim.user(caller.org.orgId, id) : null;
  if (!record) throw fail('not_found', 'this organization has no SCIM user with this id');
  return record;
}

export async function getUser(
  services: ScimServices,
  caller: ScimCaller,
  id: string,
): Promise<Record<string, unknown>> {
  const record = await userOf(services.storage, caller, id);
  return resourceOf(services, caller, record);
}

export async function listUsers(
  services: ScimServices,
  caller: ScimCaller,
  query: ListQuery,
): Promise<Record<string, unknown>> {
  const { orgId } = caller.org;
  const filter = query.filter !== undefined && query.filter !== '' ? parseScimFilter(query.filter, USER_SHAPE) : null;
  const paging = readPaging(query, MAX_RESULTS);
  const byName = filter && equalityOn(filter, 'userName');
  const byExternalId = filter && equalityOn(filter, 'externalId');
  const project = (r: Record<string, unknown>) => projectAttributes(r, query.attributes, query.excludedAttributes);
  // No filter: the store reads the page alone, not the whole org (RFC 7644 §3.4.2.4 paging at scale).
  if (filter === null) {
    const [total, page] = await Promise.all([
      services.storage.scim.countUsers(orgId),
      services.storage.scim.usersPage(orgId, paging.startIndex - 1, paging.count),
    ]);
    const resources = page.map((r) => resourceOf(services, caller, r));
    return pageResponse(resources, total, paging.startIndex, project);
  }
  let records: ScimUserRecord[];
  // The look-ups every provisioning client makes before a create are index look-ups, not scans.
  if (byName !== null && byName !== undefined) {
    const one = await services.storage.scim.userByName(orgId, foldUserName(byName));
    records = one ? [one] : [];
  } else if (byExternalId !== null && byExternalId !== undefined)
    records = await services.storage.scim.usersByExternalId(orgId, byExternalId);
  else records = await services.storage.scim.users(orgId);
  const resources = records
    .map((r) => resourceOf(services, caller, r))
    .filter((r) => matchesFilter(r, filter, USER_SHAPE));
  return listResponse(resources, paging, project);
}

/** The stored record as a resource a PATCH applies to (`active` included). */
function patchable(record: ScimUserRecord): Record<string, unknown> {
  return {
    userName: record.userName,
    ...(record.externalId !== null ? { externalId: record.externalId } : {}),
    ...structuredClone(record.attributes),
    active: (record.suspendedAt ?? null) === null,
  };
}

/**
 * A PUT or PATCH: `next` makes the new resource of the stored one (`readChange`); `ifMatch`, the
 * request's `If-Match`, is checked against the version read in the same transaction.
 */
export async function writeUser(
  services: ScimServices,
  caller: ScimCaller,
  id: string,
  next: (current: Record<string, unknown>) => Record<string, unknown>,
  ifMatch?: string,
): Promise<{ resource: Record<string, unknown>; receipt?: string }> {
  const now = services.now();
  const written = await services.storage.transaction(async (tx) => {
    const record = await userOf(tx, caller, id);
    checkIfMatch(ifMatch, resourceOf(services, caller, record));
    const fields = readUser(next(patchable(record)));
    const updated: ScimUserRecord = {
      ...record,
      userName: fields.userName,
      userNameKey: foldUserName(fields.userName),
      externalId: fields.externalId,
      attributes: fields.attributes,
      updatedAt: now,
    };
    const changed =
      JSON.stringify([record.userName, record.externalId, record.attributes]) !==
      JSON.stringify([updated.userName, updated.externalId, updated.attributes]);
    let receipt: string | undefined;
    if (changed) {
      if (!(await tx.scim.updateUser(updated))) throw taken();
      await tx.identities.setDisplayName(id, accountDisplayName(fields), now);
      await syncEmails(tx, caller.org.orgId, id, emailsOf(fields.attributes), now);
      receipt = await recordUser(services, tx, caller, 'scim.user_updated', id, fields.userName);
    }
    const wasActive = (record.suspendedAt ?? null) === null;
    if (wasActive && !fields.active) {
      await suspendAccountIn(services, tx, id, now);
      receipt = await recordUser(services, tx, caller, 'scim.user_suspended', id, fields.userName);
    } else if (!wasActive && fields.active) {
      await tx.identities.setSuspended(id, null);
      receipt = await recordUser(services, tx, caller, 'scim.user_reactivated', id, fields.userName);
    }
    const reactivated = !wasActive && fields.active;
    const emailsChanged = JSON.stringify(emailsOf(record.attributes)) !== JSON.stringify(emailsOf(fields.attributes));
    const mail =
      fields.active && (reactivated || emailsChanged) ? await offerEnrolmentAgain(services, tx, caller, id) : null;
    const result = { ...(changed ? updated : record), suspendedAt: fields.active ? null : (record.suspendedAt ?? now) };
    return { resource: resourceOf(services, caller, result), mail, ...(receipt ? { receipt } : {}) };
  });
  if (written.mail) services.mailer.enqueue(written.mail);
  const { mail: _mail, ...answer } = written;
  return answer;
}

/**
 * The re-provisioning path of docs/scim.md#a-new-link: an account the directory turns active again,
 * or gives another address, that still has no passkey and no live link gets a new one (its stale
 * unused links deleted), as at provisioning. Null when none goes out.
 */
async function offerEnrolmentAgain(services: ScimServices, tx: Stores, caller: ScimCaller, identityId: string) {
  const now = services.now();
  if ((await tx.credentials.countByIdentity(identityId)) > 0) return null;
  if (await tx.links.hasLiveEnrolment(identityId, now)) return null;
  const replaced = await tx.links.revokeEnrolments(identityId);
  const issued = await issueEnrolmentIn(services, tx, {
    identityId,
    org: caller.org,
    actor: actorOf(caller),
    replaced,
  });
  return typeof issued === 'string' ? null : issued.mail;
}

/**
 * DELETE: the managed account is deleted, as an operator's deletion would (sessions end, relying
 * parties told). `ifMatch` as for a write.
 */
export async function deleteUser(
  services: ScimServices,
  caller: ScimCaller,
  id: string,
  ifMatch?: string,
): Promise<{ receipt?: string }> {
  return services.storage.transaction(async (tx) => {
    const record = await userOf(tx, caller, id);
    checkIfMatch(ifMatch, resourceOf(services, caller, record));
    const receipt = await recordUser(services, tx, caller, 'scim.user_deleted', id, record.userName);
    await deleteAccountIn(services, tx, id, 'admin', actorOf(caller));
    return receipt ? { receipt } : {};
  });
}
