import t from 'tap';
import { ExpiringCache } from '#lib/runtime/expiring-cache.js';

t.test('an entry lives until its own deadline', async (t) => {
  const cache = new ExpiringCache<string, number>(10);
  cache.set('a', 1, 1_000, 0);
  t.equal(cache.get('a', 999), 1);
  t.equal(cache.get('a', 1_000), undefined, 'gone at the deadline');
  t.equal(cache.size, 0, 'and forgotten');
  cache.set('b', 2, 50, 100);
  t.equal(cache.get('b', 100), undefined, 'a deadline already passed keeps nothing');
  cache.set('c', 3, 500, 0);
  cache.delete('c');
  t.equal(cache.get('c', 1), undefined);
});

t.test('a full cache starts over instead of growing', async (t) => {
  const cache = new ExpiringCache<number, number>(3);
  for (let i = 0; i < 3; i++) cache.set(i, i, 1_000, 0);
  t.equal(cache.size, 3);
  cache.set(99, 99, 1_000, 0);
  t.equal(cache.size, 1);
  t.equal(cache.get(99, 1), 99);
  t.equal(cache.get(0, 1), undefined);
});
