import t from 'tap';
import { randomHex } from '../../../lib/util/random.js';

t.test('randomHex hands out lower-case hex of the asked length, never the same bytes twice, across pool refills', async (t) => {
  const seen = new Set<string>();
  // 16 bytes at a time: a 4096-byte pool runs out every 256 draws; 1,000 draws cross several refills.
  for (let i = 0; i < 1000; i++) {
    const value = randomHex(16);
    t.match(value, /^[0-9a-f]{32}$/);
    seen.add(value);
  }
  t.equal(seen.size, 1000);
  t.match(randomHex(3), /^[0-9a-f]{6}$/, 'odd sizes that do not divide the pool');
  t.throws(() => randomHex(4097), RangeError, 'never fewer bytes than asked');
});
