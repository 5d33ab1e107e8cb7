import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { runSingleFlight } from '#lib/gateway-protocol/single-flight.js';
import { MemorySharedState } from '#lib/runtime/shared-state/index.js';

// Waiters give up after waitMs: long enough that a leader stalled on a loaded machine still
// finishes first (the dead-leader case below moves its own clock instead of waiting).
const options = { lockMs: 30_000, waitMs: 20_000, resultMs: 60_000, pollMs: 5 };

t.test('20 concurrent callers: the work runs once and every caller gets its result', async (t) => {
  const state = new MemorySharedState();
  t.teardown(() => state.close());
  let calls = 0;
  const work = async () => {
    calls++;
    await sleep(50);
    return 'sealed-session-v2';
  };
  const results = await Promise.all(
    Array.from({ length: 20 }, () => runSingleFlight(state, 'refresh:sid-1', work, options)),
  );
  t.equal(calls, 1, 'one refresh');
  t.ok(
    results.every((r) => r.ok && r.value === 'sealed-session-v2'),
    'nobody is logged out',
  );
  t.equal(results.filter((r) => r.leader).length, 1);
  const late = await runSingleFlight(state, 'refresh:sid-1', work, options);
  t.match(late, { ok: true, value: 'sealed-session-v2', leader: false }, 'a late arrival reads the stored result');
  t.equal(calls, 1);
  const other = await runSingleFlight(state, 'refresh:sid-2', work, options);
  t.match(other, { ok: true, leader: true }, 'another key is another flight');
});

t.test('a failed flight fails every waiter at once; a dead leader times waiters out', async (t) => {
  const state = new MemorySharedState();
  t.teardown(() => state.close());
  const failing = async () => {
    await sleep(20);
    throw new Error('refresh token revoked');
  };
  const results = await Promise.all(Array.from({ length: 5 }, () => runSingleFlight(state, 'k', failing, options)));
  t.ok(results.every((r) => !r.ok && r.reason === 'failed'));

  await state.setIfAbsent('flight:lock:stuck', 'someone', 60_000);
  let clock = 0;
  const result = await runSingleFlight(state, 'stuck', async () => 'x', {
    ...options,
    now: () => clock,
    sleep: async () => {
      clock += 500;
    },
  });
  t.match(result, { ok: false, reason: 'timeout', leader: false });
});
