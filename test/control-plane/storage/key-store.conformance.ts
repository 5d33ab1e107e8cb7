import type { Test } from 'tap';
import type { Storage } from '../../../control-plane/src/storage/interface.js';

type Tap = Test;

/** Behaviour every KeyStore backend must show. */
export function keyStoreConformance(t: Tap, open: () => Promise<Storage>): void {
  t.test('key store: insert, list in creation order, change state, remove', async (t) => {
    const storage = await open();
    const key = (kid: string, createdAt: number) => ({
      kid,
      alg: 'ES256' as const,
      state: 'next' as const,
      publicJwk: { kty: 'EC', crv: 'P-256', x: kid, y: kid },
      sealedPrivateJwk: Buffer.from([1, 2, 3]),
      createdAt,
      activatedAt: null,
      retiredAt: null,
    });
    await storage.keys.insert(key('b', 2));
    await storage.keys.insert(key('a', 1));
    t.same(
      (await storage.keys.list()).map((k) => k.kid),
      ['a', 'b'],
    );
    await storage.keys.setState('a', 'current', 10);
    await storage.keys.setState('b', 'retired', 20);
    const [a, b] = await storage.keys.list();
    t.same([a!.state, a!.activatedAt, a!.retiredAt], ['current', 10, null]);
    t.same([b!.state, b!.retiredAt], ['retired', 20]);
    t.same(a!.sealedPrivateJwk, Buffer.from([1, 2, 3]), 'the sealed private key round-trips as bytes');
    await t.rejects(storage.keys.insert(key('a', 3)), 'kids are unique');
    await storage.keys.remove('a');
    t.same(
      (await storage.keys.list()).map((k) => k.kid),
      ['b'],
    );
  });

  t.test('transactions: all or nothing', async (t) => {
    const storage = await open();
    const key = (kid: string) => ({
      kid,
      alg: 'ES256' as const,
      state: 'next' as const,
      publicJwk: { kty: 'EC' },
      sealedPrivateJwk: Buffer.alloc(1),
      createdAt: 1,
      activatedAt: null,
      retiredAt: null,
    });
    await t.rejects(
      storage.transaction(async (tx) => {
        await tx.keys.insert(key('x'));
        throw new Error('abort');
      }),
    );
    t.same(await storage.keys.list(), [], 'a failed transaction leaves nothing');
    await storage.transaction(async (tx) => {
      await tx.keys.insert(key('y'));
    });
    t.equal((await storage.keys.list()).length, 1);
  });

  t.test('statements outside a transaction wait until it ends', async (t) => {
    const storage = await open();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const tx = storage.transaction(async (tx) => {
      await tx.keys.insert({
        kid: 'z',
        alg: 'ES256',
        state: 'next',
        publicJwk: {},
        sealedPrivateJwk: Buffer.alloc(1),
        createdAt: 1,
        activatedAt: null,
        retiredAt: null,
      });
      await gate;
      throw new Error('roll back');
    });
    const outside = storage.keys.list();
    release();
    await t.rejects(tx);
    t.same(await outside, [], 'the outside read saw neither the uncommitted nor the rolled-back row');
  });
}
