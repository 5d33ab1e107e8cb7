import type { Test } from 'tap';
import type { Storage, StoredWebhook, WebhookDelivery } from '../../../control-plane/src/storage/interface.js';

const webhook = (webhookId: string, orgId: string | null): StoredWebhook => ({
  webhookId,
  orgId,
  url: `https://hooks.example/${webhookId}`,
  events: ['account.*'],
  description: null,
  secretSealed: Buffer.from([1, 2, 3]),
  previousSecretSealed: null,
  previousSecretUntil: null,
  state: 'active',
  failingSince: null,
  createdAt: 1000,
  updatedAt: 1000,
});

const delivery = (deliveryId: string, webhookId: string, at = 1000): WebhookDelivery => ({
  deliveryId,
  webhookId,
  receiptHash: 'a'.repeat(64),
  payload: '{"type":"account.created"}',
  createdAt: at,
  attempts: 0,
  nextAttemptAt: at,
  state: 'pending',
  lastStatus: null,
  lastError: null,
  finishedAt: null,
});

/** The webhooks' store and outbox, for every backend (docs/events.md#webhooks). */
export function webhookStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test('webhook store: the operator and each org list only their own; the secret round-trips', async (t) => {
    const storage = await open();
    await storage.webhooks.insert(webhook('whk_op', null));
    await storage.webhooks.insert(webhook('whk_org', 'org_1'));
    t.same(
      (await storage.webhooks.list(null)).map((w) => w.webhookId),
      ['whk_op'],
    );
    t.same(
      (await storage.webhooks.list('org_1')).map((w) => w.webhookId),
      ['whk_org'],
    );
    t.same((await storage.webhooks.get('whk_op'))?.secretSealed, Buffer.from([1, 2, 3]));
    t.same((await storage.webhooks.get('whk_org'))?.events, ['account.*']);
    t.equal(await storage.webhooks.remove('whk_org'), true);
    t.equal(await storage.webhooks.remove('whk_org'), false);
    t.same(
      (await storage.webhooks.listActive()).map((w) => w.webhookId),
      ['whk_op'],
    );
  });

  t.test('webhook store: a due delivery is leased to one claimer, and only its holder finishes it', async (t) => {
    const storage = await open();
    await storage.webhooks.insert(webhook('whk_1', null));
    await storage.webhooks.enqueue(delivery('msg_1', 'whk_1', 1000));
    await storage.webhooks.enqueue(delivery('msg_2', 'whk_1', 5000));
    t.same(await storage.webhooks.backlog(), { pending: 2, oldestCreatedAt: 1000 });
    const [first, second] = await Promise.all([
      storage.webhooks.claimDue(2000, 'a', 62_000, 10),
      storage.webhooks.claimDue(2000, 'b', 62_000, 10),
    ]);
    t.same(
      [...first!, ...second!].map((d) => d.deliveryId),
      ['msg_1'],
      'claimed once, and only what is due',
    );
    const holder = first!.length ? 'a' : 'b';
    const update = {
      state: 'pending' as const,
      attempts: 1,
      nextAttemptAt: 7000,
      lastStatus: 500,
      lastError: 'status_500',
      finishedAt: null,
    };
    t.equal(await storage.webhooks.finish('msg_1', holder === 'a' ? 'b' : 'a', update), false, 'not the holder');
    t.equal(await storage.webhooks.finish('msg_1', holder, update), true);
    await storage.webhooks.recordAttempt({
      deliveryId: 'msg_1',
      webhookId: 'whk_1',
      attempt: 1,
      at: 2000,
      status: 500,
      error: 'status_500',
    });
    t.same(await storage.webhooks.claimDue(6000, 'a', 66_000, 10).then((d) => d.map((x) => x.deliveryId)), ['msg_2']);
    t.same(await storage.webhooks.claimDue(7000, 'a', 67_000, 10).then((d) => d.map((x) => x.deliveryId)), ['msg_1']);
    t.same(
      (await storage.webhooks.attempts('whk_1', 10)).map((a) => [a.attempt, a.status]),
      [[1, 500]],
    );
  });

  t.test('webhook store: failing since the first failure; disabling kills the queue', async (t) => {
    const storage = await open();
    await storage.webhooks.insert(webhook('whk_1', null));
    await storage.webhooks.enqueue(delivery('msg_1', 'whk_1'));
    await storage.webhooks.markFailing('whk_1', 2000);
    await storage.webhooks.markFailing('whk_1', 3000);
    t.equal((await storage.webhooks.get('whk_1'))?.failingSince, 2000, 'the first failure counts');
    t.equal(await storage.webhooks.disable('whk_1', 4000), true);
    t.equal(await storage.webhooks.disable('whk_1', 4000), false);
    t.equal((await storage.webhooks.getDelivery('msg_1'))?.state, 'dead');
    t.same(await storage.webhooks.backlog(), { pending: 0, oldestCreatedAt: null });
    t.same(await storage.webhooks.listActive(), []);
  });
}
