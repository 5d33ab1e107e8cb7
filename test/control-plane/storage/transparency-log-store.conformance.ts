import type { Test } from 'tap';
import type { Storage } from '../../../control-plane/src/storage/interface.js';

/** Behaviour every TransparencyLogStore backend must show. */
export function transparencyLogStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test('transparency log store: tiles are upserted whole, a partial tile grows in place', async (t) => {
    const storage = await open();
    t.equal(await storage.tlog.tile(0, 0), undefined);
    await storage.tlog.putTiles([{ level: 0, index: 0, hashes: Buffer.alloc(64, 1) }]);
    await storage.tlog.putTiles([
      { level: 0, index: 0, hashes: Buffer.alloc(96, 2) },
      { level: 1, index: 3, hashes: Buffer.alloc(32, 3) },
    ]);
    t.same(await storage.tlog.tile(0, 0), Buffer.alloc(96, 2));
    t.same(await storage.tlog.tile(1, 3), Buffer.alloc(32, 3));
    t.equal(await storage.tlog.head(), undefined, 'no epoch logged yet');
  });

  t.test("transparency log store: the witness's size moves only from the size it holds", async (t) => {
    const storage = await open();
    const root = (n: number) => Buffer.alloc(32, n);
    t.equal(await storage.tlog.witnessed('log.example/a'), undefined);
    t.equal(await storage.tlog.advanceWitnessed('log.example/a', 0, 8, root(8), 1), true, 'first checkpoint');
    t.equal(await storage.tlog.advanceWitnessed('log.example/a', 0, 9, root(9), 2), false, 'a second "first"');
    t.equal(await storage.tlog.advanceWitnessed('log.example/a', 5, 9, root(9), 2), false, 'from a size not held');
    t.equal(await storage.tlog.advanceWitnessed('log.example/a', 8, 13, root(13), 3), true);
    t.same(await storage.tlog.witnessed('log.example/a'), { size: 13, root: root(13) });
    const raced = await Promise.all([
      storage.tlog.advanceWitnessed('log.example/a', 13, 20, root(20), 4),
      storage.tlog.advanceWitnessed('log.example/a', 13, 21, root(21), 4),
    ]);
    t.same(raced.sort(), [false, true], 'of two moves from the same size, one wins');
  });

  t.test('transparency log store: note keys by purpose, retired all but the one kept', async (t) => {
    const storage = await open();
    const key = (keyId: string, purpose: 'log' | 'witness', createdAt: number) => ({
      keyId,
      purpose,
      name: 'log.example/ledger',
      publicKey: Buffer.alloc(32, createdAt),
      sealedPrivateKey: Buffer.from('sealed'),
      createdAt,
      retiresAt: null,
    });
    await storage.tlog.insertNoteKey(key('aa', 'log', 1));
    await storage.tlog.insertNoteKey(key('bb', 'log', 2));
    await storage.tlog.insertNoteKey(key('cc', 'witness', 3));
    await storage.tlog.retireNoteKeys('log', 'bb', 99);
    t.same(
      (await storage.tlog.noteKeys('log')).map((k) => [k.keyId, k.retiresAt]),
      [
        ['aa', 99],
        ['bb', null],
      ],
    );
    t.same(
      (await storage.tlog.noteKeys('witness')).map((k) => k.keyId),
      ['cc'],
    );
  });
}
