import type { Test } from 'tap';
import type { Storage } from '../../../control-plane/src/storage/interface.js';
import { canonicalJson } from '#lib/ledger/canonical-json.js';
import { hashReceipt, treeKeyOf } from '#lib/ledger/receipt.js';

type Tap = Test;

const receipt = (n: number) => ({ kind: 'test.event', at: '2026-11-22T12:00:00.000Z', outcome: 'success', n });

/** Behaviour every ReceiptStore backend must show. */
export function receiptStoreConformance(t: Tap, open: () => Promise<Storage>): void {
  t.test('receipt store: append in a transaction, get by hash, pending oldest first', async (t) => {
    const storage = await open();
    const hashes = [3, 1, 2].map((n) => hashReceipt(receipt(n)));
    await storage.transaction(async (tx) => {
      for (const [i, n] of [3, 1, 2].entries()) await tx.receipts.append(receipt(n), hashes[i]!, 1000 + i);
    });
    const got = await storage.receipts.get(hashes[0]!);
    t.same(got, {
      hash: hashes[0],
      body: canonicalJson(receipt(3)),
      treeKey: treeKeyOf(hashes[0]!),
      createdAt: 1000,
      epoch: null,
      index: null,
      path: null,
      tlogIndex: null,
    });
    t.equal(await storage.receipts.get('00'.repeat(32)), undefined, 'an unknown hash');
    t.same(
      (await storage.receipts.pending(10)).map((p) => p.hash),
      hashes,
      'pending in arrival order',
    );
    t.same(
      (await storage.receipts.pending(2)).map((p) => p.hash),
      hashes.slice(0, 2),
      'limited',
    );
    t.equal(await storage.receipts.pendingCount(), 3);
    await t.rejects(storage.receipts.append(receipt(3), hashes[0]!, 0), 'hashes are unique');
  });

  t.test('receipt store: the audit export lists by position, kind, a whole named id and time', async (t) => {
    const storage = await open();
    const named = (n: number, kind: string, who: string) => ({ ...receipt(n), kind, identityId: who });
    const rows = [named(1, 'a.one', 'usr_a1'), named(2, 'b.two', 'usr_ab1'), named(3, 'a.one', 'usr_a1')];
    for (const [i, row] of rows.entries()) await storage.receipts.append(row, hashReceipt(row), 1000 * (i + 1));
    const all = await storage.receipts.list({ after: 0, limit: 2 });
    t.same(
      all.map((r) => r.hash),
      rows.slice(0, 2).map(hashReceipt),
    );
    const rest = await storage.receipts.list({ after: all[1]!.position, limit: 2 });
    t.same(
      rest.map((r) => r.hash),
      [hashReceipt(rows[2]!)],
      'after the cursor',
    );
    t.equal((await storage.receipts.list({ after: 0, limit: 9, kind: 'a.one' })).length, 2);
    // `_` is a LIKE wildcard: usr_a1 must not match usrXa1, and a prefix never matches.
    t.equal((await storage.receipts.list({ after: 0, limit: 9, subject: 'usr_a1' })).length, 2);
    t.equal((await storage.receipts.list({ after: 0, limit: 9, subject: 'usr%a1' })).length, 0);
    t.equal((await storage.receipts.list({ after: 0, limit: 9, subject: 'usr_a' })).length, 0);
    t.equal((await storage.receipts.list({ after: 0, limit: 9, since: 2000, until: 3000 })).length, 1);
  });

  t.test('receipt store: a rolled-back transaction leaves no receipt', async (t) => {
    const storage = await open();
    const hash = hashReceipt(receipt(9));
    await t.rejects(
      storage.transaction(async (tx) => {
        await tx.receipts.append(receipt(9), hash, 0);
        throw new Error('the action failed');
      }),
    );
    t.equal(await storage.receipts.get(hash), undefined);
  });

  t.test('receipt store: assign an epoch, store checkpoints, find neighbours by key', async (t) => {
    const storage = await open();
    const hashes = [1, 2, 3, 4].map((n) => hashReceipt(receipt(n)));
    for (const [i, h] of hashes.entries()) await storage.receipts.append(receipt(i + 1), h, i);
    const sorted = [...hashes].sort((a, b) => Buffer.compare(treeKeyOf(a), treeKeyOf(b)));
    const path = (i: number) => [Buffer.alloc(32, i), Buffer.alloc(32, i + 100)];
    await storage.transaction(async (tx) => {
      await tx.receipts.insertCheckpoint({
        epoch: 1,
        jws: 'a.b.c',
        root: 'ab'.repeat(32),
        size: 3,
        prev: null,
        sealedAt: 5,
      });
      await tx.receipts.assignEpoch(
        1,
        sorted.slice(0, 3).map((hash, index) => ({ hash, index, path: path(index) })),
      );
    });
    t.same(await storage.receipts.checkpoint(1), {
      epoch: 1,
      jws: 'a.b.c',
      root: 'ab'.repeat(32),
      size: 3,
      prev: null,
      sealedAt: 5,
    });
    t.same(await storage.receipts.latestCheckpoint(), await storage.receipts.checkpoint(1));
    t.equal(await storage.receipts.checkpoint(2), undefined);
    const sealed = await storage.receipts.get(sorted[1]!);
    t.same([sealed!.epoch, sealed!.index, sealed!.path], [1, 1, path(1)]);
    t.same(
      (await storage.receipts.pending(10)).map((p) => p.hash),
      [sorted[3]],
    );
    await t.rejects(
      storage.receipts.assignEpoch(2, [{ hash: sorted[0]!, index: 0, path: [] }]),
      'a sealed receipt is never sealed again',
    );
    await t.rejects(
      storage.receipts.insertCheckpoint({
        epoch: 1,
        jws: 'd.e.f',
        root: 'cd'.repeat(32),
        size: 1,
        prev: null,
        sealedAt: 6,
      }),
      'an epoch is sealed once',
    );

    const middle = await storage.receipts.neighbours(1, treeKeyOf(sorted[1]!));
    t.same([middle.left?.index, middle.match?.index, middle.right?.index], [0, 1, 2]);
    t.same(middle.left!.treeKey, treeKeyOf(sorted[0]!));
    t.same(middle.left!.path, path(0));
    const below = await storage.receipts.neighbours(1, Buffer.alloc(32, 0));
    t.same([below.left, below.match, below.right?.index], [undefined, undefined, 0]);
    const above = await storage.receipts.neighbours(1, Buffer.alloc(32, 0xff));
    t.same([above.left?.index, above.match, above.right], [2, undefined, undefined]);
    t.same(await storage.receipts.neighbours(2, Buffer.alloc(32, 1)), {}, 'an unsealed epoch has no keys');
    t.same(
      (await storage.receipts.epochReceipts(1)).map((r) => [r.hash, r.index]),
      sorted.slice(0, 3).map((h, i) => [h, i]),
    );
  });

  t.test('receipt store: appendSealed writes receipts already placed in an epoch, none pending', async (t) => {
    const storage = await open();
    const named = (n: number) => ({ ...receipt(n), identityId: `usr_sealed_${n}` });
    const rows = [1, 2, 3].map((n) => ({ body: canonicalJson(named(n)), hash: hashReceipt(named(n)) }));
    const path = (i: number) => [Buffer.alloc(32, i + 1), Buffer.alloc(32, i + 7)];
    await storage.transaction(async (tx) => {
      await tx.receipts.insertCheckpoint({
        epoch: 1,
        jws: 'a.b.c',
        root: 'ab'.repeat(32),
        size: 3,
        prev: null,
        sealedAt: 5,
      });
      await tx.receipts.appendSealed(
        1,
        rows.map((r, index) => ({ ...r, kind: 'test.event', createdAt: 1000 + index, index, path: path(index) })),
      );
    });
    t.same(await storage.receipts.get(rows[1]!.hash), {
      hash: rows[1]!.hash,
      body: rows[1]!.body,
      treeKey: treeKeyOf(rows[1]!.hash),
      createdAt: 1001,
      epoch: 1,
      index: 1,
      path: path(1),
      tlogIndex: null,
    });
    t.equal(await storage.receipts.pendingCount(), 0, 'nothing left for the sealer');
    t.same(
      (await storage.receipts.epochReceipts(1)).map((r) => [r.hash, r.body, r.index]),
      rows.map((r, i) => [r.hash, r.body, i]),
    );
    t.same(
      (await storage.receipts.list({ after: 0, limit: 9 })).map((r) => r.hash),
      rows.map((r) => r.hash),
      'in the audit export, in order',
    );
    t.same(
      (await storage.receipts.list({ after: 0, limit: 9, subject: 'usr_sealed_2' })).map((r) => r.hash),
      [rows[1]!.hash],
      'found by the id it names',
    );
    await t.rejects(
      storage.receipts.appendSealed(2, [{ ...rows[0]!, kind: 'test.event', createdAt: 0, index: 0, path: [] }]),
      'a receipt is written once',
    );
  });
}
