import { isIP } from 'node:net';
import { randomId } from '#lib/crypto/random.js';
import type { GuardedFetchOptions } from '#lib/fetch/guarded-fetch.js';
import type { Receipt } from '#lib/ledger/receipt.js';
import { backoffMs, type BackoffPolicy } from '#lib/outbox/backoff.js';
import { matchesEventFilter } from '#lib/webhooks/event-filter.js';
import { receiptConcernsOrg, type OwnedKind } from '#lib/webhooks/org-scope.js';
import { webhookHeaders } from '#lib/webhooks/standard-webhooks.js';
import type { ControlPlaneConfig } from '#config/types.js';
import type { ControlPlaneServices } from '../context.js';
import { outcomeOfFetchFailure, type DeliveryOutcome, type OutboxAdapter } from '../outbox/delivery-loop.js';
import type { Storage, StoredWebhook, Stores, WebhookDelivery } from '../storage/interface.js';

/** The sealing context of a webhook's secret (keys/secrets.ts): bound to the webhook. */
export const secretContext = (webhookId: string) => `webhook-secret:${webhookId}`;

/**
 * Webhooks as a subscriber of the ledger (docs/architecture.md#the-ledgers-write-path): every
 * receipt a webhook may see and asked for becomes a delivery row in the receipt's transaction;
 * the delivery loop sends it, signed per Standard Webhooks, until a 2xx answer.
 */

/** Waits between attempts: 5 s, doubling, at most an hour apart. */
const BACKOFF: BackoffPolicy = { firstMs: 5000, factor: 2, maxMs: 3_600_000 };
/** A webhook failing this long without one success is disabled (`webhook.disabled`), its queue dead. */
export const DISABLE_AFTER_MS = 24 * 3_600_000;
const DELIVERY = { timeoutMs: 10_000, maxBytes: 65_536 };
/** Finished deliveries and the attempt log are kept this long. */
const KEEP_FINISHED_MS = 30 * 86_400_000;

/**
 * The guarded fetcher's options for a webhook's destination: the configured rules, and for the
 * operator's webhooks only, the private destinations `fetch.operatorPrivateTargets` lets through
 * (addresses and CIDR ranges, or host names).
 */
export function fetchPolicyFor(config: ControlPlaneConfig, orgId: string | null, url: string): GuardedFetchOptions {
  const targets = config.fetch.operatorPrivateTargets ?? [];
  if (orgId !== null || targets.length === 0) return {};
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return {};
  }
  const ranges = targets.filter((target) => isIP(target.split('/')[0]!) !== 0);
  if (targets.some((target) => target.toLowerCase() === host && isIP(target) === 0))
    return { allowPrivateTargets: true };
  return ranges.length ? { allowAddresses: ranges } : {};
}

/** The Standard Webhooks body: `{type, timestamp, data: <the receipt>, receipt_url}`. */
export function webhookPayload(issuer: string, receipt: Receipt, hash: string): string {
  return JSON.stringify({
    type: receipt.kind,
    timestamp: receipt.at,
    data: receipt,
    receipt_url: `${issuer}/receipts/${hash}`,
  });
}

/** Queues one receipt for one webhook in `tx`; returns the delivery id, which is also its `webhook-id`. */
export async function queueDelivery(
  services: Pick<ControlPlaneServices, 'config' | 'now'>,
  tx: Stores,
  webhook: StoredWebhook,
  receipt: Receipt,
  hash: string,
): Promise<string> {
  const now = services.now();
  const delivery: WebhookDelivery = {
    deliveryId: randomId('msg'),
    webhookId: webhook.webhookId,
    receiptHash: hash,
    payload: webhookPayload(services.config.issuer, receipt, hash),
    createdAt: now,
    attempts: 0,
    nextAttemptAt: now,
    state: 'pending',
    lastStatus: null,
    lastError: null,
    finishedAt: null,
  };
  await tx.webhooks.enqueue(delivery);
  return delivery.deliveryId;
}

/** The key of `owners`: what an org owns, by kind and id. */
const ownedKey = (kind: OwnedKind, id: string) => `${kind}:${id}`;

/** Whether `webhook` may see `receipt` and asked for it; `owners` answers which org owns what it names. */
function wants(webhook: StoredWebhook, receipt: Receipt, owners: ReadonlyMap<string, string>): boolean {
  // The test button's receipt goes to the webhook it names, and to no other.
  if (receipt.kind === 'webhook.tested') return false;
  if (!matchesEventFilter(webhook.events, receipt.kind)) return false;
  if (webhook.orgId === null) return true;
  return receiptConcernsOrg(receipt, webhook.orgId, (kind, id) => owners.get(ownedKey(kind, id)));
}

type OwnerStores = Pick<
  Storage,
  'clients' | 'saml' | 'connections' | 'scim' | 'apis' | 'teams' | 'orgs' | 'identities'
>;

/**
 * What each org owns that a receipt may name (lib/webhooks/org-scope.ts): its clients and SAML
 * providers, connections, SCIM tokens, APIs, teams, sites and managed accounts, keyed by `ownedKey`.
 */
async function ownedBy(storage: OwnerStores, orgId: string, owners: Map<string, string>): Promise<void> {
  const found: Array<[OwnedKind, string[]]> = [
    ['client', (await storage.clients.listByOwner(orgId)).map((client) => client.clientId)],
    ['client', (await storage.saml.listProviders([orgId])).map((provider) => provider.id)],
    ['connection', (await storage.connections.list(orgId)).map((connection) => connection.connectionId)],
    ['scim_token', (await storage.scim.tokens(orgId)).map((token) => token.tokenId)],
    ['api', (await storage.apis.list(orgId)).map((api) => api.apiId)],
    ['team', (await storage.teams.list(orgId)).map((team) => team.teamId)],
    ['site', (await storage.orgs.sites(orgId)).map((site) => site.siteId)],
    ['managed_account', (await storage.identities.listManaged(orgId)).map((identity) => identity.identityId)],
  ];
  for (const [kind, ids] of found) for (const id of ids) owners.set(ownedKey(kind, id), orgId);
}

/**
 * The active webhooks, and what the orgs among their owners own, as the ledger follower reads
 * them: held in memory, refreshed every poll interval and at once after a change made here.
 * The follower runs inside the receipt's transaction, and on PostgreSQL that
 * transaction may take writes only (a one-time value spent with it: storage/postgres/sql.ts
 * `collectingSql`), so it reads nothing there. A webhook added on another replica sees receipts
 * from that replica's next refresh on (docs/events.md#webhooks).
 *
 * A refresh reads the webhooks and the directory generation, which triggers move with every
 * change to what an org owns or manages, in the writing transaction, on every replica; what the
 * orgs own is read again only when the generation moved or the webhooks name another set of orgs,
 * so a quiet directory costs two small reads a poll, not every managed account.
 */
export class WebhookTargets {
  private current: { webhooks: StoredWebhook[]; owners: Map<string, string> } = { webhooks: [], owners: new Map() };
  private built: { generation: number; orgs: string } | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** How many times what the orgs own was read (tests and docs/events.md#org-webhooks). */
  ownerReads = 0;

  constructor(private readonly storage: Pick<Storage, 'webhooks' | 'gateway'> & OwnerStores) {}

  async refresh(): Promise<void> {
    // The generation is read before the owners: a write landing in between makes them newer
    // than their generation, never older, and the next refresh reads them again.
    const generation = await this.storage.gateway.directoryGeneration();
    const webhooks = await this.storage.webhooks.listActive();
    const orgIds = [...new Set(webhooks.flatMap((webhook) => (webhook.orgId ? [webhook.orgId] : [])))].sort();
    const orgs = orgIds.join(' ');
    if (this.built && this.built.generation === generation && this.built.orgs === orgs) {
      this.current = { webhooks, owners: this.current.owners };
      return;
    }
    const owners = new Map<string, string>();
    for (const orgId of orgIds) await ownedBy(this.storage, orgId, owners);
    this.ownerReads++;
    this.current = { webhooks, owners };
    this.built = { generation, orgs };
  }

  start(everyMs: number, onError: (error: unknown) => void): void {
    this.timer = setInterval(() => void this.refresh().catch(onError), everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  snapshot(): { webhooks: readonly StoredWebhook[]; owners: ReadonlyMap<string, string> } {
    return this.current;
  }
}

/**
 * The ledger follower: queues the receipt for every active webhook that wants it, in the
 * receipt's transaction (writes only), and tells `queued` when it queued any.
 */
export function webhookFollower(
  services: Pick<ControlPlaneServices, 'config' | 'now'>,
  targets: WebhookTargets,
  queued: () => void,
): (tx: Stores, receipt: Receipt, hash: string) => Promise<void> {
  return async (tx, receipt, hash) => {
    const { webhooks, owners } = targets.snapshot();
    let any = false;
    for (const webhook of webhooks) {
      if (!wants(webhook, receipt, owners)) continue;
      await queueDelivery(services, tx, webhook, receipt, hash);
      any = true;
    }
    if (any) queued();
  };
}

export type WebhookDeliveryServices = Pick<
  ControlPlaneServices,
  'storage' | 'events' | 'secrets' | 'fetcher' | 'config' | 'now'
>;

/** The secrets that sign now: the current one, and the previous one while its overlap lasts. */
function signingSecrets(services: WebhookDeliveryServices, webhook: StoredWebhook, now: number): string[] {
  const open = (sealed: Buffer) => services.secrets.open(secretContext(webhook.webhookId), sealed).toString();
  const secrets = [open(webhook.secretSealed)];
  if (webhook.previousSecretSealed && webhook.previousSecretUntil !== null && webhook.previousSecretUntil > now)
    secrets.push(open(webhook.previousSecretSealed));
  return secrets;
}

/** The webhooks subscriber of the delivery loop. */
export function webhookAdapter(services: WebhookDeliveryServices): OutboxAdapter<WebhookDelivery> {
  const { storage } = services;
  return {
    subscriber: 'webhook',
    claimDue: (now, holder, leaseUntil, limit) => storage.webhooks.claimDue(now, holder, leaseUntil, limit),
    backlog: () => storage.webhooks.backlog(),
    purge: (now) => storage.webhooks.purge(now - KEEP_FINISHED_MS),
    async attempt(delivery) {
      const webhook = await storage.webhooks.get(delivery.webhookId);
      if (!webhook || webhook.state !== 'active') return { kind: 'abandon', error: 'webhook_disabled' };
      const now = services.now();
      const headers = webhookHeaders(
        { id: delivery.deliveryId, timestamp: Math.floor(now / 1000), body: delivery.payload },
        signingSecrets(services, webhook, now),
      );
      try {
        const answer = await services.fetcher.fetch(webhook.url, {
          ...DELIVERY,
          ...fetchPolicyFor(services.config, webhook.orgId, webhook.url),
          method: 'POST',
          body: delivery.payload,
          headers: { 'content-type': 'application/json', ...headers },
          accept: '*/*',
          followRedirects: false,
        });
        // Standard Webhooks: any 2xx is success; everything else is tried again later.
        return answer.status >= 200 && answer.status < 300
          ? { kind: 'delivered', status: answer.status }
          : { kind: 'retry', error: `status_${answer.status}`, status: answer.status };
      } catch (error) {
        return outcomeOfFetchFailure(error);
      }
    },
    settle: (delivery, outcome, holder) => settle(services, delivery, outcome, holder),
  };
}

async function settle(
  services: WebhookDeliveryServices,
  delivery: WebhookDelivery,
  outcome: DeliveryOutcome,
  holder: string,
): Promise<'delivered' | 'pending' | 'dead' | 'lost'> {
  const now = services.now();
  const attempts = delivery.attempts + 1;
  const state = outcome.kind === 'delivered' ? 'delivered' : outcome.kind === 'abandon' ? 'dead' : 'pending';
  const status = outcome.kind === 'delivered' ? outcome.status : (outcome.status ?? null);
  const error = outcome.kind === 'delivered' ? null : outcome.error;
  return services.storage.transaction(async (tx) => {
    // Our lease ran out and another replica took the row: its outcome counts, not ours.
    const finished = await tx.webhooks.finish(delivery.deliveryId, holder, {
      state,
      attempts,
      nextAttemptAt: state === 'pending' ? now + backoffMs(attempts, BACKOFF, Math.random()) : delivery.nextAttemptAt,
      lastStatus: status,
      lastError: error,
      finishedAt: state === 'pending' ? null : now,
    });
    if (!finished) return 'lost';
    await tx.webhooks.recordAttempt({
      deliveryId: delivery.deliveryId,
      webhookId: delivery.webhookId,
      attempt: attempts,
      at: now,
      status,
      error,
    });
    if (outcome.kind === 'delivered') {
      await tx.webhooks.markFailing(delivery.webhookId, null);
      return 'delivered';
    }
    await tx.webhooks.markFailing(delivery.webhookId, now);
    const webhook = await tx.webhooks.get(delivery.webhookId);
    if (webhook?.failingSince != null && now - webhook.failingSince >= DISABLE_AFTER_MS) {
      if (await tx.webhooks.disable(webhook.webhookId, now))
        await services.events.record(tx, {
          type: 'webhook.disabled',
          at: now,
          outcome: 'failure',
          actor: { type: 'system' },
          webhookId: webhook.webhookId,
          orgId: webhook.orgId,
          failingSince: webhook.failingSince,
        });
      return 'dead';
    }
    return state;
  });
}
