import type { Test } from 'tap';
import type { Storage, StoredContact } from '../../../control-plane/src/storage/interface.js';

const contact = (contactId: string, createdAt = 1000): StoredContact => ({
  contactId,
  email: 'ada@example.com',
  topic: 'security',
  message: 'Line one\nLine two — ünïcode ✓',
  createdAt,
  mailedAt: null,
});

/** Behaviour every ContactStore backend must show. */
export function contactStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test('contact store: a message is kept as sent and marked mailed once', async (t) => {
    const { contacts } = await open();
    await contacts.insert(contact('ctc_a'));
    t.same(await contacts.get('ctc_a'), contact('ctc_a'));
    t.equal(await contacts.get('ctc_nope'), null);
    t.equal(await contacts.markMailed('ctc_a', 2000), true);
    t.equal(await contacts.markMailed('ctc_a', 3000), false, 'only the first marking counts');
    t.same(await contacts.get('ctc_a'), { ...contact('ctc_a'), mailedAt: 2000 });
    t.equal(await contacts.markMailed('ctc_nope', 2000), false);
    await t.rejects(contacts.insert(contact('ctc_a')), 'an id is used once');
  });

  t.test('contact store: old messages are purged, newer ones stay', async (t) => {
    const { contacts } = await open();
    await contacts.insert(contact('ctc_old', 1000));
    await contacts.insert(contact('ctc_new', 5000));
    t.equal(await contacts.purgeBefore(2000), 1);
    t.equal(await contacts.get('ctc_old'), null);
    t.ok(await contacts.get('ctc_new'));
  });

  t.test('contact store: an insert inside a rolled-back transaction leaves nothing', async (t) => {
    const storage = await open();
    await t.rejects(
      storage.transaction(async (tx) => {
        await tx.contacts.insert(contact('ctc_tx'));
        throw new Error('roll back');
      }),
    );
    t.equal(await storage.contacts.get('ctc_tx'), null);
  });
}
