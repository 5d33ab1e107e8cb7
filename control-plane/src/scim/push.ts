import type { OrgRule } from '#lib/access/evaluate-access.js';
import { backoffMs, type BackoffPolicy } from '#lib/outbox/backoff.js';
import {
  createdId,
  deactivation,
  equalityFilter,
  firstListedId,
  outboundGroup,
  outboundUser,
  type OutboundUser,
} from '#lib/scim/outbound.js';
import { clientParty, askConsent } from '../consent/gate.js';
import { judgeAccess } from '../clients/sign-in-access.js';
import type { ControlPlaneServices } from '../context.js';
import { outcomeOfFetchFailure, type DeliveryOutcome, type OutboxAdapter } from '../outbox/delivery-loop.js';
import type { ScimPushJob, StoredClient, StoredOrg, StoredScimPushTarget, StoredTeam } from '../storage/interface.js';
import { fetchPolicyFor } from '../webhooks/outbox.js';
import { pushRules, pushedOrgs, queueEveryone, queueGroupsOf } from './push-queue.js';

/**
 * Outbound SCIM as a subscriber of the delivery loop (docs/scim.md#outbound-scim): a receipt that
 * changes who may sign in to a client with a SCIM server, or as what, queues the account (or
 * team) for that client in the receipt's transaction; the delivery loop pushes its state as it
 * is when sent (create, update, `active: false`), through the guarded fetcher, with backoff.
 * Each client also keeps one standing `reconcile` row that queues everyone again periodically.
 */

/** The sealing context of a client's SCIM bearer token (keys/secrets.ts): bound to the client. */
export const scimTokenContext = (clientId: string) => `scim-push-token:${clientId}`;

/** Waits between attempts: 5 s, doubling, at most an hour apart; a row failing a day is dead until the next reconcile. */
const BACKOFF: BackoffPolicy = { firstMs: 5000, factor: 2, maxMs: 3_600_000 };
const GIVE_UP_AFTER_MS = 24 * 3_600_000;
/** Every client's users and groups are queued again this often, and when the client changes. */
export const RECONCILE_EVERY_MS = 3_600_000;
const REQUEST = { timeoutMs: 10_000, maxBytes: 1_048_576 };
const KEEP_DELIVERED_MS = 7 * 86_400_000;
/** The status a job delivers with when the remote end already holds what it should: nothing was sent, no sync to count. */
const NOTHING_SENT = 204;

export type ScimPushServices = Pick<
  ControlPlaneServices,
  'storage' | 'events' | 'secrets' | 'fetcher' | 'config' | 'now'
>;

/** A remote answer that is not the one asked for: worth another try later. */
class RemoteRefused extends Error {
  constructor(readonly status: number) {
    super(`status_${status}`);
  }
}

/** One client's push, as every job of it needs it. */
interface PushContext {
  /** Requests sent to the remote end for this job so far. */
  sent: number;
  client: StoredClient;
  target: StoredScimPushTarget;
  token: string;
  rules: OrgRule[] | null;
  orgs: StoredOrg[];
}

async function contextFor(services: ScimPushServices, clientId: string): Promise<PushContext | null> {
  const { storage } = services;
  const [client, target] = await Promise.all([storage.clients.get(clientId), storage.scimPush.target(clientId)]);
  if (!client || !target) return null;
  const owner = client.ownerId ? await storage.orgs.get(client.ownerId) : null;
  return {
    sent: 0,
    client,
    target,
    token: services.secrets.open(scimTokenContext(clientId), target.tokenSealed).toString(),
    rules: pushRules(client, owner),
    orgs: await pushedOrgs(storage, client),
  };
}

/** One request to the client's SCIM server through the guarded fetcher; the answer's status and JSON body. */
async function remote(
  services: ScimPushServices,
  context: PushContext,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const url = `${context.target.baseUrl}${path}`;
  context.sent += 1;
  const answer = await services.fetcher.fetch(url, {
    ...REQUEST,
    // Private addresses only for the operator's clients, as for its webhooks (docs/fetch.md).
    ...fetchPolicyFor(services.config, context.client.ownerId, url),
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/scim+json' } }),
    accept: 'application/scim+json, application/json;q=0.9',
    destinationAuthorization: `Bearer ${context.token}`,
    followRedirects: false,
  });
  let json: unknown = null;
  try {
    json = answer.body.length > 0 ? JSON.parse(answer.body.toString('utf8')) : null;
  } catch {
    // A body that is not JSON is judged by its status alone.
  }
  return { status: answer.status, json };
}

const succeeded = (status: number) => status >= 200 && status < 300;

function expect2xx(answer: { status: number }): void {
  if (!succeeded(answer.status)) throw new RemoteRefused(answer.status);
}

/** RFC 7644 §3.4.2: the remote id of the resource `filter` finds, or null. */
async function findRemote(
  services: ScimPushServices,
  context: PushContext,
  endpoint: '/Users' | '/Groups',
  filter: string,
): Promise<string | null> {
  const answer = await remote(services, context, 'GET', `${endpoint}?filter=${encodeURIComponent(filter)}`);
  expect2xx(answer);
  return firstListedId(answer.json);
}

/**
 * What the client's server should hold for the account, or null when it should hold nothing
 * active: an active account its rules admit that the org manages, or that approved the client
 * (the one consent gate decides). The address goes only where the account released `email`.
 */
async function desiredUser(
  services: ScimPushServices,
  context: PushContext,
  identityId: string,
): Promise<OutboundUser | null> {
  const { storage } = services;
  if (!context.rules) return null;
  const [identity, state] = await Promise.all([
    storage.identities.get(identityId),
    storage.identities.state(identityId),
  ]);
  if (!identity || state !== 'active') return null;
  if (!(await judgeAccess(storage, context.rules, identityId)).allowed) return null;
  const manager = context.orgs.find((org) => org.orgId === identity.managedBy);
  const party = clientParty(context.client);
  if (!manager && !(await askConsent(services, identityId, party, { scopes: [] })).approved) return null;
  const emailReleased =
    manager !== undefined || (await askConsent(services, identityId, party, { scopes: ['email'] })).approved;
  const email = emailReleased
    ? (await storage.emails.listByIdentity(identityId)).find((e) => e.verifiedAt !== null)?.email
    : undefined;
  // A managed account is known at its org's directory by the userName SCIM gave it.
  const provisioned = manager ? await storage.scim.user(manager.orgId, identityId) : null;
  return {
    userName: provisioned?.userName ?? identity.username,
    externalId: identityId,
    ...(identity.displayName ? { displayName: identity.displayName } : {}),
    ...(email ? { email } : {}),
  };
}

/** Pushes one account's state; true when it is now active at the remote end. */
async function pushUser(services: ScimPushServices, context: PushContext, identityId: string): Promise<boolean> {
  const { storage } = services;
  const clientId = context.client.clientId;
  const [desired, link] = await Promise.all([
    desiredUser(services, context, identityId),
    storage.scimPush.link(clientId, 'user', identityId),
  ]);
  const record = (
    type: 'scim.outbound.user_provisioned' | 'scim.outbound.user_deactivated',
    remoteId: string,
    active: boolean,
    matched = false,
  ) =>
    storage.transaction(async (tx) => {
      await tx.scimPush.putLink({
        clientId,
        resource: 'user',
        localId: identityId,
        remoteId,
        active,
        updatedAt: services.now(),
      });
      await queueGroupsOf(services, tx, context.client.clientId, context.orgs, identityId, active);
      await services.events.record(tx, {
        type,
        at: services.now(),
        outcome: 'success',
        actor: { type: 'system' },
        clientId,
        identityId,
        ...(type === 'scim.outbound.user_provisioned' ? { matched } : {}),
      });
    });
  if (!desired) {
    if (!link?.active) return false;
    const answer = await remote(
      services,
      context,
      'PATCH',
      `/Users/${encodeURIComponent(link.remoteId)}`,
      deactivation(),
    );
    // Gone at the remote end already: nothing is left active there.
    if (answer.status === 404) await storage.scimPush.removeLink(clientId, 'user', identityId);
    else {
      expect2xx(answer);
      await record('scim.outbound.user_deactivated', link.remoteId, false);
    }
    return false;
  }
  const resource = outboundUser(desired);
  if (link) {
    const answer = await remote(services, context, 'PUT', `/Users/${encodeURIComponent(link.remoteId)}`, resource);
    if (answer.status !== 404) {
      expect2xx(answer);
      if (!link.active) await record('scim.outbound.user_provisioned', link.remoteId, true, true);
      return true;
    }
  }
  // Match a user the remote end holds already (by our `sub`, then by userName) before creating one.
  const found =
    (await findRemote(services, context, '/Users', equalityFilter('externalId', desired.externalId))) ??
    (await findRemote(services, context, '/Users', equalityFilter('userName', desired.userName)));
  if (found) {
    expect2xx(await remote(services, context, 'PUT', `/Users/${encodeURIComponent(found)}`, resource));
    await record('scim.outbound.user_provisioned', found, true, true);
    return true;
  }
  const created = await remote(services, context, 'POST', '/Users', resource);
  expect2xx(created);
  const remoteId = createdId(created.json);
  if (!remoteId) throw new RemoteRefused(created.status);
  await record('scim.outbound.user_provisioned', remoteId, true);
  return true;
}

async function findTeam(services: ScimPushServices, context: PushContext, teamId: string): Promise<StoredTeam | null> {
  for (const org of context.orgs) {
    const team = (await services.storage.teams.list(org.orgId)).find((t) => t.teamId === teamId);
    if (team) return team;
  }
  return null;
}

/** Pushes one team as a Group whose members are its pushed, active accounts (pushed first when they are not yet). */
async function pushGroup(services: ScimPushServices, context: PushContext, teamId: string): Promise<void> {
  const { storage } = services;
  const clientId = context.client.clientId;
  const [team, link] = await Promise.all([
    findTeam(services, context, teamId),
    storage.scimPush.link(clientId, 'group', teamId),
  ]);
  const record = (type: 'scim.outbound.group_provisioned' | 'scim.outbound.group_removed', remoteId: string | null) =>
    storage.transaction(async (tx) => {
      if (remoteId === null) await tx.scimPush.removeLink(clientId, 'group', teamId);
      else
        await tx.scimPush.putLink({
          clientId,
          resource: 'group',
          localId: teamId,
          remoteId,
          active: true,
          updatedAt: services.now(),
        });
      await services.events.record(tx, {
        type,
        at: services.now(),
        outcome: 'success',
        actor: { type: 'system' },
        clientId,
        teamId,
      });
    });
  if (!team) {
    if (!link) return;
    const answer = await remote(services, context, 'DELETE', `/Groups/${encodeURIComponent(link.remoteId)}`);
    if (answer.status !== 404) expect2xx(answer);
    await record('scim.outbound.group_removed', null);
    return;
  }
  // Members are the team's users already active at the remote end; one pushed later queues the Group again.
  const memberIds: string[] = [];
  for (const member of await storage.teams.members(teamId)) {
    const pushed = await storage.scimPush.link(clientId, 'user', member.identityId);
    if (pushed?.active && (await desiredUser(services, context, member.identityId))) memberIds.push(pushed.remoteId);
  }
  const resource = outboundGroup({ displayName: team.displayName, externalId: team.teamId, memberIds });
  if (link) {
    const answer = await remote(services, context, 'PUT', `/Groups/${encodeURIComponent(link.remoteId)}`, resource);
    if (answer.status !== 404) return expect2xx(answer);
  }
  const found =
    (await findRemote(services, context, '/Groups', equalityFilter('externalId', team.teamId))) ??
    (await findRemote(services, context, '/Groups', equalityFilter('displayName', team.displayName)));
  if (found) {
    expect2xx(await remote(services, context, 'PUT', `/Groups/${encodeURIComponent(found)}`, resource));
    return record('scim.outbound.group_provisioned', found);
  }
  const created = await remote(services, context, 'POST', '/Groups', resource);
  expect2xx(created);
  const remoteId = createdId(created.json);
  if (!remoteId) throw new RemoteRefused(created.status);
  await record('scim.outbound.group_provisioned', remoteId);
}

/** The outbound SCIM subscriber of the delivery loop. */
export function scimPushAdapter(services: ScimPushServices): OutboxAdapter<ScimPushJob> {
  const { storage } = services;
  return {
    subscriber: 'scim_push',
    claimDue: (now, holder, leaseUntil, limit) => storage.scimPush.claimDue(now, holder, leaseUntil, limit),
    backlog: () => storage.scimPush.backlog(),
    purge: (now) => storage.scimPush.purge(now - KEEP_DELIVERED_MS),
    async attempt(job) {
      const context = await contextFor(services, job.clientId);
      if (!context) return { kind: 'abandon', error: 'scim_target_removed' };
      try {
        if (job.resource === 'reconcile') await queueEveryone(services, context.client.clientId, context.orgs);
        else if (job.resource === 'user') await pushUser(services, context, job.localId);
        else await pushGroup(services, context, job.localId);
        return { kind: 'delivered', status: context.sent > 0 ? 200 : NOTHING_SENT };
      } catch (error) {
        if (error instanceof RemoteRefused) return { kind: 'retry', error: error.message, status: error.status };
        return outcomeOfFetchFailure(error);
      }
    },
    settle: (job, outcome, holder) => settle(services, job, outcome, holder),
  };
}

async function settle(
  services: ScimPushServices,
  job: ScimPushJob,
  outcome: DeliveryOutcome,
  holder: string,
): Promise<'delivered' | 'pending' | 'dead' | 'lost'> {
  const now = services.now();
  const attempts = outcome.kind === 'delivered' ? 0 : job.attempts + 1;
  const standing = job.resource === 'reconcile';
  // A refusal that never heals (an internal address, the target gone) ends the row; only the standing row never times out.
  const dead =
    outcome.kind === 'abandon' || (!standing && outcome.kind === 'retry' && now - job.createdAt >= GIVE_UP_AFTER_MS);
  const state = outcome.kind === 'delivered' ? (standing ? 'pending' : 'delivered') : dead ? 'dead' : 'pending';
  const nextAttemptAt =
    outcome.kind === 'delivered'
      ? standing
        ? now + RECONCILE_EVERY_MS
        : job.nextAttemptAt
      : now + backoffMs(attempts, BACKOFF, Math.random());
  return services.storage.transaction(async (tx) => {
    const finished = await tx.scimPush.finish(job, holder, {
      state,
      attempts,
      nextAttemptAt,
      lastStatus: outcome.kind === 'delivered' ? null : (outcome.status ?? null),
      lastError: outcome.kind === 'delivered' ? null : outcome.error,
      finishedAt: state === 'pending' ? null : now,
    });
    if (finished === 'lost') return 'lost';
    if (outcome.kind === 'delivered') {
      // Only a push that reached the remote end counts as a sync (the standing row only queues).
      if (outcome.status !== NOTHING_SENT) await tx.scimPush.markSynced(job.clientId, now);
      return 'delivered';
    }
    if (finished === 'finished' && dead && outcome.error !== 'scim_target_removed')
      await services.events.record(tx, {
        type: 'scim.outbound.abandoned',
        at: now,
        outcome: 'failure',
        actor: { type: 'system' },
        clientId: job.clientId,
        resource: job.resource,
        localId: job.localId,
        attempts,
      });
    return dead && finished === 'finished' ? 'dead' : 'pending';
  });
}
