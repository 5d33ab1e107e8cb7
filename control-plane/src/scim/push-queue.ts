import type { OrgRule } from '#lib/access/evaluate-access.js';
import { fail } from '#lib/errors/keyplane-error.js';
import type { Receipt } from '#lib/ledger/receipt.js';
import { pushSubjectsOf } from '#lib/scim/outbound.js';
import type { ControlPlaneServices } from '../context.js';
import type { Storage, StoredClient, StoredOrg, Stores } from '../storage/interface.js';

/**
 * What outbound SCIM queues (docs/scim.md#outbound-scim): the clients with a SCIM server, whom
 * a receipt makes each push again, in the receipt's transaction, and what a client's sync state
 * reads. The pushes themselves are scim/push.ts.
 */

/**
 * The clients with a SCIM server and the orgs each pushes, as the follower reads them: held in
 * memory, refreshed every poll interval and at once after a change here (the follower runs in
 * the receipt's transaction, which takes writes only on PostgreSQL).
 */
export class ScimPushTargets {
  private current = new Map<string, ReadonlySet<string>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly storage: Pick<Storage, 'scimPush' | 'clients' | 'orgs'>) {}

  async refresh(): Promise<void> {
    const next = new Map<string, ReadonlySet<string>>();
    for (const target of await this.storage.scimPush.targets()) {
      const client = await this.storage.clients.get(target.clientId);
      if (client) next.set(client.clientId, new Set((await pushedOrgs(this.storage, client)).map((org) => org.orgId)));
    }
    this.current = next;
  }

  start(everyMs: number, onError: (error: unknown) => void): void {
    this.timer = setInterval(() => void this.refresh().catch(onError), everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  snapshot(): ReadonlyMap<string, ReadonlySet<string>> {
    return this.current;
  }
}

/** The rules that decide who is pushed: the client's `access.orgs`, or its owning org's members. */
export function pushRules(client: StoredClient, owner: StoredOrg | null): OrgRule[] | null {
  if (client.metadata.access.orgs) return client.metadata.access.orgs;
  return owner ? [{ slug: owner.slug }] : null;
}

/** The orgs whose members a client's SCIM server hears of (its rules' orgs, or its owner). */
export async function pushedOrgs(stores: Pick<Stores, 'orgs'>, client: StoredClient): Promise<StoredOrg[]> {
  const owner = client.ownerId ? await stores.orgs.get(client.ownerId) : null;
  const orgs: StoredOrg[] = [];
  for (const rule of pushRules(client, owner) ?? []) {
    const org = await stores.orgs.getBySlug(rule.slug);
    if (org && !orgs.some((o) => o.orgId === org.orgId)) orgs.push(org);
  }
  return orgs;
}

/** The ledger follower: queues what a receipt names for every client it may concern (writes only). */
export function scimPushFollower(
  services: Pick<ControlPlaneServices, 'now'>,
  targets: ScimPushTargets,
  queued: () => void,
): (tx: Stores, receipt: Receipt) => Promise<void> {
  return async (tx, receipt) => {
    const clients = targets.snapshot();
    if (clients.size === 0) return;
    const subjects = pushSubjectsOf(receipt as Receipt & Record<string, unknown>);
    if (!subjects) return;
    const at = services.now();
    if (subjects.removed) {
      if (clients.has(subjects.removed)) await tx.scimPush.removeTarget(subjects.removed);
      return;
    }
    if (subjects.reconcile) {
      if (!clients.has(subjects.reconcile)) return;
      await tx.scimPush.enqueue(subjects.reconcile, 'reconcile', subjects.reconcile, at);
      queued();
      return;
    }
    let any = false;
    for (const [clientId, orgIds] of clients) {
      if (subjects.clientId !== undefined && subjects.clientId !== clientId) continue;
      if (subjects.orgId !== undefined && !orgIds.has(subjects.orgId)) continue;
      for (const identityId of subjects.users) await tx.scimPush.enqueue(clientId, 'user', identityId, at);
      for (const teamId of subjects.groups) await tx.scimPush.enqueue(clientId, 'group', teamId, at);
      any = true;
    }
    if (any) queued();
  };
}

/**
 * A user that became active at the remote end joins its teams' Groups there, and one that left
 * leaves every Group pushed: their rows are queued in the same transaction as the user's link.
 * Groups never push users themselves, so a user and a Group sent at once never create it twice.
 */
export async function queueGroupsOf(
  services: Pick<ControlPlaneServices, 'now'>,
  tx: Stores,
  clientId: string,
  orgs: readonly StoredOrg[],
  identityId: string,
  active: boolean,
): Promise<void> {
  const at = services.now();
  if (!active) {
    for (const link of await tx.scimPush.links(clientId, 'group'))
      await tx.scimPush.enqueue(clientId, 'group', link.localId, at);
    return;
  }
  for (const held of await tx.teams.teamsOf(identityId)) {
    const org = orgs.find((o) => o.slug === held.orgSlug);
    const team = org ? await tx.teams.get(org.orgId, held.teamSlug) : null;
    if (team) await tx.scimPush.enqueue(clientId, 'group', team.teamId, at);
  }
}

/** Queues every account and team the client's server should hear of, and every one it holds. */
export async function queueEveryone(
  services: Pick<ControlPlaneServices, 'storage' | 'now'>,
  clientId: string,
  orgs: readonly StoredOrg[],
): Promise<void> {
  const { storage } = services;
  const users = new Set((await storage.scimPush.links(clientId, 'user')).map((link) => link.localId));
  const groups = new Set((await storage.scimPush.links(clientId, 'group')).map((link) => link.localId));
  for (const org of orgs) {
    for (const member of await storage.orgs.members(org.orgId)) users.add(member.identityId);
    for (const team of await storage.teams.list(org.orgId)) groups.add(team.teamId);
  }
  const at = services.now();
  await storage.transaction(async (tx) => {
    for (const identityId of users) await tx.scimPush.enqueue(clientId, 'user', identityId, at);
    for (const teamId of groups) await tx.scimPush.enqueue(clientId, 'group', teamId, at);
  });
}

/** `GET /admin/clients/{client_id}/scim`: when the push last succeeded, what waits, what fails. */
export interface ScimSyncState {
  base_url: string;
  last_sync: string | null;
  pending: number;
  failures: Array<{
    resource: 'user' | 'group' | 'reconcile';
    id: string;
    state: 'pending' | 'dead';
    attempts: number;
    last_status: number | null;
    last_error: string | null;
    next_attempt_at: string | null;
  }>;
}

export async function scimSyncState(
  services: Pick<ControlPlaneServices, 'storage'>,
  clientId: string,
): Promise<ScimSyncState> {
  const target = await services.storage.scimPush.target(clientId);
  if (!target) throw fail('not_found', 'this client has no SCIM server');
  const rows = await services.storage.scimPush.unfinished(clientId);
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    base_url: target.baseUrl,
    last_sync: target.lastSyncAt === null ? null : iso(target.lastSyncAt),
    pending: rows.filter((row) => row.state === 'pending' && row.resource !== 'reconcile').length,
    failures: rows
      .filter((row) => row.state === 'dead' || row.attempts > 0)
      .map((row) => ({
        resource: row.resource,
        id: row.localId,
        state: row.state === 'dead' ? 'dead' : 'pending',
        attempts: row.attempts,
        last_status: row.lastStatus,
        last_error: row.lastError,
        next_attempt_at: row.state === 'dead' ? null : iso(row.nextAttemptAt),
      })),
  };
}

/** The client's sync state, or null when it has no SCIM server (the pages show nothing then). */
export async function scimSyncStateIfAny(
  services: Pick<ControlPlaneServices, 'storage'>,
  clientId: string,
): Promise<ScimSyncState | null> {
  return (await services.storage.scimPush.target(clientId)) ? scimSyncState(services, clientId) : null;
}
