import t from 'tap';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { until } from './until.js';
import type { SharedState } from '#lib/runtime/shared-state/types.js';
import { Lockout } from '#lib/runtime/security/lockout.js';
import { RateLimiter } from '#lib/runtime/security/rate-limiter.js';

/** One suite, run against every implementation. TTLs are short real times: Redis keeps its own clock. */
export function sharedStateSuite(name: string, open: () => Promise<SharedState>): void {
  t.test(`${name}: shared state`, async (t) => {
    const state = await open();
    t.teardown(() => state.close());
    const k = (suffix: string) => `test:${randomUUID()}:${suffix}`;

    t.test('incrWithTtl counts and sets the TTL on the first increment only', async (t) => {
      const key = k('incr');
      // The window is long enough that a stalled process cannot lose it between the two
      // increments; waiting out what is left of it is safe however slow the machine is.
      const first = await state.incrWithTtl(key, 1500);
      t.equal(first.count, 1);
      t.ok(first.ttlMs > 0 && first.ttlMs <= 1500);
      const second = await state.incrWithTtl(key, 5000);
      t.equal(second.count, 2);
      t.ok(second.ttlMs <= 1500, 'a later increment does not extend the window');
      await sleep(second.ttlMs + 20);
      t.equal((await state.incrWithTtl(key, 500)).count, 1, 'the window expired and restarted');
    });

    t.test('setIfAbsent stores once', async (t) => {
      const key = k('nx');
      // A long life: on a loaded machine a second could pass between two calls.
      t.equal(await state.setIfAbsent(key, 'a', 60_000), true);
      t.equal(await state.setIfAbsent(key, 'b', 60_000), false);
      t.equal(await state.get(key), 'a');
    });

    t.test('values expire', async (t) => {
      const key = k('ttl');
      const setAt = Date.now();
      await state.set(key, 'v', 1000);
      const value = await state.get(key);
      // Only a read within the value's second can expect it (a loaded machine may take longer).
      if (Date.now() - setAt < 900) t.equal(value, 'v');
      await until('the value to expire', async () => ((await state.get(key)) === null ? true : undefined));
      t.equal(await state.setIfAbsent(key, 'again', 1000), true, 'an expired key is absent');
    });

    t.test('take reads and deletes: of many concurrent takes exactly one wins', async (t) => {
      const key = k('take');
      await state.set(key, 'one-time', 5000);
      const results = await Promise.all(Array.from({ length: 20 }, () => state.take(key)));
      t.same(
        results.filter((r) => r !== null),
        ['one-time'],
      );
      t.equal(await state.get(key), null);
      t.equal(await state.take(k('missing')), null);
    });

    t.test('concurrent setIfAbsent: exactly one succeeds', async (t) => {
      const key = k('race');
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => state.setIfAbsent(key, String(i), 5000)));
      t.equal(results.filter(Boolean).length, 1);
    });

    t.test('del removes', async (t) => {
      const key = k('del');
      await state.set(key, 'v', 5000);
      await state.del(key);
      t.equal(await state.get(key), null);
    });

    t.test('publish reaches subscribers until they unsubscribe', async (t) => {
      const channel = k('chan');
      const received: string[] = [];
      const unsubscribe = await state.subscribe(channel, (m) => received.push(m));
      await state.publish(channel, 'hello');
      await until('the message', async () => (received.length > 0 ? true : undefined));
      t.same(received, ['hello']);
      await unsubscribe();
      // A message on a channel still subscribed, published after: once it arrives, anything the
      // unsubscribed channel would have got has arrived too (one connection delivers in order).
      const marker = k('marker');
      let marked = false;
      const stopMarker = await state.subscribe(marker, () => (marked = true));
      t.teardown(stopMarker);
      await state.publish(channel, 'after');
      await state.publish(marker, 'done');
      await until('the marker message', async () => (marked ? true : undefined));
      t.same(received, ['hello']);
    });

    t.test('rate limiter allows max per window and reports when to retry', async (t) => {
      const limiter = new RateLimiter(state);
      const subject = randomUUID();
      const decisions = [];
      for (let i = 0; i < 4; i++) decisions.push(await limiter.hit('test', subject, { max: 3, windowMs: 10_000 }));
      t.same(
        decisions.map((d) => d.allowed),
        [true, true, true, false],
      );
      t.same(
        decisions.map((d) => d.remaining),
        [2, 1, 0, 0],
      );
      t.ok(decisions[3]!.retryAfterMs > 0 && decisions[3]!.retryAfterMs <= 10_000);
      t.equal(
        (await limiter.hit('test', randomUUID(), { max: 3, windowMs: 10_000 })).allowed,
        true,
        'subjects are independent',
      );
    });

    t.test('lockout after the threshold, started exactly once, success clears failures', async (t) => {
      const lockout = new Lockout(state, { threshold: 3, lockMs: 10_000 });
      const subject = `acct:${randomUUID()}:totp`;
      t.equal((await lockout.recordFailure(subject)).locked, false);
      await lockout.recordSuccess(subject);
      t.equal((await lockout.recordFailure(subject)).failures, 1, 'a success reset the count');
      t.equal((await lockout.recordFailure(subject)).locked, false);
      const third = await lockout.recordFailure(subject);
      t.equal(third.locked, true);
      t.equal(third.started, true);
      const fourth = await lockout.recordFailure(subject);
      t.equal(fourth.locked, true);
      t.equal(fourth.started, false, 'only one failure starts the lockout');
      const status = await lockout.status(subject);
      t.equal(status.locked, true);
      t.ok(status.retryAfterMs > 0 && status.retryAfterMs <= 10_000);
      t.equal((await lockout.status(`acct:${randomUUID()}:totp`)).locked, false);
    });
  });
}
