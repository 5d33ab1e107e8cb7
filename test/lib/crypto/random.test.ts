import t from 'tap';
import { randomHex, randomId, randomToken } from '#lib/crypto/random.js';

t.test(
  'randomHex hands out lower-case hex of the asked length, never the same bytes twice, across pool refills',
  async (t) => {
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
  },
);

t.test(
  'tokens and ids share the pool: the asked entropy, URL-safe unless asked otherwise, never repeated',
  async (t) => {
    const seen = new Set<string>();
    for (let i = 0; i < 600; i++) {
      const token = randomToken();
      t.match(token, /^[A-Za-z0-9_-]{43}$/);
      seen.add(token);
      seen.add(randomHex(16));
    }
    t.equal(seen.size, 1200);
    t.match(randomId('gr'), /^gr_[A-Za-z0-9_-]{22}$/);
    t.match(randomToken(16, 'base64'), /^[A-Za-z0-9+/]{22}==$/);
    t.equal(Buffer.from(randomToken(5000), 'base64url').length, 5000, 'more than a pool is drawn directly');
  },
);
