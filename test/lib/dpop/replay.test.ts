import t from 'tap';
import { MemorySharedState } from '#lib/runtime/shared-state/memory.js';
import { sharedReplayCheck } from '#lib/dpop/replay.js';
import { normalizeHtu } from '#lib/dpop/normalize-htu.js';

t.test('a jti is accepted once per key while its proof is acceptable', async (t) => {
  let now = 1_000_000;
  const state = new MemorySharedState(() => now);
  t.teardown(() => state.close());
  const isReplay = sharedReplayCheck(state, () => now);
  t.equal(await isReplay('j1', 'key-a', now + 60_000), false);
  t.equal(await isReplay('j1', 'key-a', now + 60_000), true, 'the same proof again is a replay');
  t.equal(await isReplay('j1', 'key-b', now + 60_000), false, 'another key may use the same jti');
  now += 61_000;
  t.equal(await isReplay('j1', 'key-a', now + 60_000), false, 'forgotten once no proof could still be accepted');
});

t.test('normalizes htu per RFC 3986 and refuses what is not an http(s) URI', async (t) => {
  t.equal(normalizeHtu('HTTPS://Example.COM:443/a/./b/../c?q#f'), 'https://example.com/a/c');
  t.equal(normalizeHtu('http://example.com'), 'http://example.com/');
  t.equal(normalizeHtu('http://example.com:8080/%7e%2f'), 'http://example.com:8080/~%2F');
  t.equal(normalizeHtu('ftp://example.com/'), null);
  t.equal(normalizeHtu('https://user@example.com/'), null);
  t.equal(normalizeHtu('/relative'), null);
});
