import { fail } from '#lib/errors/keyplane-error.js';
import { randomId } from '#lib/crypto/random.js';
import { checkEventFilters } from '#lib/webhooks/event-filter.js';
import { generateWebhookSecret } from '#lib/webhooks/standard-webhooks.js';
import { checkFreeText } from '#lib/accounts/username.js';
import type { ControlPlaneServices } from '../context.js';
import type { Actor } from '../events/types.js';
import type { StoredWebhook, Stores, WebhookAttempt } from '../storage/interface.js';
import { fetchPolicyFor, queueDelivery, secretContext } from './outbox.js';

/**
 * Webhooks (docs/events.md#webhooks): the operator's (`orgId` null, through the admin token) and
 * each org's (its owners at `sensitive`). Operations take the owner they act for; the routes
 * decide who may act for it. The secret is returned by `createWebhook` and `rotateWebhookSecret`
 * only, and stored sealed under the master key.
 */

export type WebhookServices = Pick<
  ControlPlaneServices,
  'storage' | 'events' | 'secrets' | 'fetcher' | 'config' | 'now' | 'webhookDelivery' | 'webhookTargets'
>;

/** Who a webhook operation acts for: the operator or one org, and who acted. */
export interface WebhookOwner {
  orgId: string | null;
  actor: Actor;
}

/** During a rotation the old secret keeps signing this long beside the new (Standard Webhooks). */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;
const DESCRIPTION_MAX = 200;
const URL_MAX = 2048;
const DELIVERY_LOG_LIMIT = 100;

/** What a webhook looks like to its owner: never its secret. */
export interface WebhookView {
  webhookId: string;
  url: string;
  events: string[];
  description: string | null;
  state: StoredWebhook['state'];
  createdAt: string;
  updatedAt: string;
  failingSince: string | null;
  previousSecretUntil: string | null;
}

export function webhookView(webhook: StoredWebhook): WebhookView {
  const time = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    webhookId: webhook.webhookId,
    url: webhook.url,
    events: webhook.events,
    description: webhook.description,
    state: webhook.state,
    createdAt: new Date(webhook.createdAt).toISOString(),
    updatedAt: new Date(webhook.updatedAt).toISOString(),
    failingSince: time(webhook.failingSince),
    previousSecretUntil: time(webhook.previousSecretUntil),
  };
}

/** The secret is sealed for this webhook alone: a sealed value copied to another row does not open. */
async function checkUrl(services: WebhookServices, orgId: string | null, input: unknown): Promise<string> {
  if (typeof input !== 'string' || input.length === 0 || input.length > URL_MAX)
    throw fail('invalid_request', 'url must be an https URL');
  // The fetcher's rules at creation too: an internal destination is refused now, not only at delivery.
  const checked = await services.fetcher.check(input, fetchPolicyFor(services.config, orgId, input));
  return checked.url.href;
}

function checkDescription(input: unknown): string | null {
  if (input === undefined || input === null || input === '') return null;
  return checkFreeText(input, DESCRIPTION_MAX, 'invalid_request', 'the description') || null;
}

/** Records a webhook event in `tx` with the owner's actor; returns the receipt hash. */
async function recordWebhookEvent(
  services: WebhookServices,
  tx: Stores,
  owner: WebhookOwner,
  type: 'webhook.created' | 'webhook.updated' | 'webhook.deleted' | 'webhook.secret_rotated' | 'webhook.tested',
  webhookId: string,
): Promise<string | undefined> {
  const { receipt } = await services.events.record(tx, {
    type,
    at: services.now(),
    outcome: 'success',
    actor: owner.actor,
    webhookId,
    orgId: owner.orgId,
  });
  return receipt;
}

export async function createWebhook(
  services: WebhookServices,
  owner: WebhookOwner,
  input: { url?: unknown; events?: unknown; description?: unknown },
): Promise<{ webhook: StoredWebhook; secret: string; receipt?: string }> {
  const events = checkEventFilters(input.events);
  const description = checkDescription(input.description);
  // Last: it resolves the host.
  const url = await checkUrl(services, owner.orgId, input.url);
  const now = services.now();
  const webhookId = randomId('whk');
  const secret = generateWebhookSecret();
  const webhook: StoredWebhook = {
    webhookId,
    orgId: owner.orgId,
    url,
    events,
    description,
    secretSealed: services.secrets.seal(secretContext(webhookId), secret),
    previousSecretSealed: null,
    previousSecretUntil: null,
    state: 'active',
    failingSince: null,
    createdAt: now,
    updatedAt: now,
  };
  const receipt = await services.storage.transaction(async (tx) => {
    await tx.webhooks.insert(webhook);
    return recordWebhookEvent(services, tx, owner, 'webhook.created', webhookId);
  });
  await services.webhookTargets.refresh();
  return { webhook, secret, ...(receipt ? { receipt } : {}) };
}

/** The owner's webhook; another owner's, or none, is the same 404. */
export async function ownedWebhook(
  services: Pick<WebhookServices, 'storage'>,
  owner: WebhookOwner,
  webhookId: string,
): Promise<StoredWebhook> {
  const webhook = await services.storage.webhooks.get(webhookId);
  if (!webhook || webhook.orgId !== owner.orgId) throw fail('not_found', 'no such webhook');
  return webhook;
}

export function listWebhooks(
  services: Pick<WebhookServices, 'storage'>,
  owner: WebhookOwner,
): Promise<StoredWebhook[]> {
  return services.storage.webhooks.list(owner.orgId);
}

/** Changes the URL, filters, description, or turns a disabled webhook on again (`state: "active"`). */
export async function updateWebhook(
  services: WebhookServices,
  owner: WebhookOwner,
  webhookId: string,
  input: { url?: unknown; events?: unknown; description?: unknown; state?: unknown },
): Promise<{ webhook: StoredWebhook; receipt?: string }> {
  const current = await ownedWebhook(services, owner, webhookId);
  if (input.state !== undefined && input.state !== 'active' && input.state !== 'disabled')
    throw fail('invalid_request', 'state is active or disabled');
  const state = (input.state as StoredWebhook['state'] | undefined) ?? current.state;
  const webhook: StoredWebhook = {
    ...current,
    url: input.url === undefined ? current.url : await checkUrl(services, owner.orgId, input.url),
    events: input.events === undefined ? current.events : checkEventFilters(input.events),
    description: input.description === undefined ? current.description : checkDescription(input.description),
    state,
    // Turned on again: the 24 h of failures that disable it start over.
    failingSince: state === 'active' && current.state === 'disabled' ? null : current.failingSince,
    updatedAt: services.now(),
  };
  const receipt = await services.storage.transaction(async (tx) => {
    await tx.webhooks.update(webhook);
    return recordWebhookEvent(services, tx, owner, 'webhook.updated', webhookId);
  });
  await services.webhookTargets.refresh();
  return { webhook, ...(receipt ? { receipt } : {}) };
}

export async function deleteWebhook(
  services: WebhookServices,
  owner: WebhookOwner,
  webhookId: string,
): Promise<{ receipt?: string }> {
  await ownedWebhook(services, owner, webhookId);
  const receipt = await services.storage.transaction(async (tx) => {
    if (!(await tx.webhooks.remove(webhookId))) throw fail('not_found', 'no such webhook');
    return recordWebhookEvent(services, tx, owner, 'webhook.deleted', webhookId);
  });
  await services.webhookTargets.refresh();
  return receipt ? { receipt } : {};
}

/** A new secret; the current one keeps signing beside it for 24 h, so receivers can switch over. */
export async function rotateWebhookSecret(
  services: WebhookServices,
  owner: WebhookOwner,
  webhookId: string,
): Promise<{ secret: string; previousSecretUntil: number; receipt?: string }> {
  const current = await ownedWebhook(services, owner, webhookId);
  const now = services.now();
  const secret = generateWebhookSecret();
  const webhook: StoredWebhook = {
    ...current,
    secretSealed: services.secrets.seal(secretContext(webhookId), secret),
    previousSecretSealed: current.secretSealed,
    previousSecretUntil: now + ROTATION_OVERLAP_MS,
    updatedAt: now,
  };
  const receipt = await services.storage.transaction(async (tx) => {
    await tx.webhooks.update(webhook);
    return recordWebhookEvent(services, tx, owner, 'webhook.secret_rotated', webhookId);
  });
  await services.webhookTargets.refresh();
  return { secret, previousSecretUntil: webhook.previousSecretUntil!, ...(receipt ? { receipt } : {}) };
}

/**
 * The test button: a `webhook.tested` receipt, sent to this webhook alone whatever its filters
 * (other webhooks never get it: outbox.ts).
 */
export async function testWebhook(
  services: WebhookServices,
  owner: WebhookOwner,
  webhookId: string,
): Promise<{ deliveryId: string; receipt?: string }> {
  const webhook = await ownedWebhook(services, owner, webhookId);
  if (webhook.state !== 'active') throw fail('conflict', 'the webhook is disabled; turn it on first');
  let deliveryId = '';
  const receipt = await services.storage.transaction(async (tx) => {
    const hash = await recordWebhookEvent(services, tx, owner, 'webhook.tested', webhookId);
    const stored = hash === undefined ? undefined : await tx.receipts.get(hash);
    if (!hash || !stored) throw fail('internal', 'the test receipt was not written');
    deliveryId = await queueDelivery(services, tx, webhook, JSON.parse(stored.body) as never, hash);
    return hash;
  });
  services.webhookDelivery.nudge();
  return { deliveryId, ...(receipt ? { receipt } : {}) };
}

/** The delivery log: the latest attempts, newest first (status or a fetch reason, never a body). */
export async function webhookAttempts(
  services: Pick<WebhookServices, 'storage'>,
  owner: WebhookOwner,
  webhookId: string,
): Promise<WebhookAttempt[]> {
  await ownedWebhook(services, owner, webhookId);
  return services.storage.webhooks.attempts(webhookId, DELIVERY_LOG_LIMIT);
}
