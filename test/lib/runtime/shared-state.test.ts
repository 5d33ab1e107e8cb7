import t from 'tap';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { MemorySharedState } from '#lib/runtime/shared-state/memory.js';
import { RedisSharedState } from '#lib/runtime/shared-state/redis.js';
import { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import { openSharedState, parseRedisAddress, redisTopologyOf } from '#lib/runtime/shared-state/index.js';
import { isDependencyUnavailable } from '#lib/errors/dependency-outage.js';
import { findFreePort } from '#lib/runtime/listen.js';
import { Lockout } from '#lib/runtime/security/lockout.js';
import { REDIS_URL, redisAvailability } from '../../helpers/redis.js';
import { sharedStateSuite } from '../../helpers/shared-state-conformance.js';

sharedStateSuite('in-process', async () => new MemorySharedState());

const redis = await redisAvailability();
if (redis.run)
  sharedStateSuite('redis', async () =>
    new RedisSharedState(REDIS_URL, { prefix: `kptest:${randomUUID()}:` }).connect(),
  );
else t.test(`redis: shared state`, { skip: redis.reason }, () => undefined);

t.test('in-process lockout expires with a controlled clock', async (t) => {
  let now = 1_000_000;
  const state = new MemorySharedState(() => now);
  t.teardown(() => state.close());
  const lockout = new Lockout(state, { threshold: 2, lockMs: 900_000 }, () => now);
  await lockout.recordFailure('s');
  t.equal((await lockout.recordFailure('s')).locked, true);
  now += 899_999;
  t.equal((await lockout.status('s')).locked, true);
  now += 2;
  t.equal((await lockout.status('s')).locked, false, 'the lock lapses after lockMs');
  t.equal((await lockout.recordFailure('s')).failures, 1, 'failures from before the lock are gone');
});

t.test('a Redis that does not answer fails to open instead of silently degrading', async (t) => {
  const state = new RedisSharedState('redis://127.0.0.1:1', { connectTimeoutMs: 500 });
  await t.rejects(state.connect());
  await state.close().catch(() => undefined);
});

/** Settings as the config gives them, the Redis named one way or another. */
const settings = (redis: Record<string, unknown> = {}, redisUrl?: string) => ({
  ...(redisUrl ? { redisUrl } : {}),
  redis: {
    sentinels: [],
    clusterNodes: [],
    tls: false,
    commandTimeoutMs: 1000,
    waitReplicas: 0,
    waitTimeoutMs: 250,
    ...redis,
  },
});

t.test('the config names one Redis: a URL, Sentinels with their master, or Cluster nodes', async (t) => {
  t.equal(redisTopologyOf(settings()), null, 'none: in-process');
  t.same(redisTopologyOf(settings({}, 'redis://r:6379/2')), { url: 'redis://r:6379/2' });
  t.same(
    redisTopologyOf(
      settings({ sentinels: ['s1:26379', '[::1]:26380'], masterName: 'main', password: 'p', sentinelPassword: 'sp' }),
    ),
    {
      sentinels: [
        { host: 's1', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      masterName: 'main',
      password: 'p',
      sentinelPassword: 'sp',
    },
  );
  t.same(redisTopologyOf(settings({ clusterNodes: ['10.0.0.1:7000'], tls: true })), {
    cluster: [{ host: '10.0.0.1', port: 7000 }],
    tls: true,
  });
  t.throws(() => parseRedisAddress('no-port'));
  t.same(await openSharedState(settings()).then((state) => state.kind), 'memory');
});

t.test('an operation that gets no answer within the budget fails as unavailable, and says so once', async (t) => {
  // Accepts connections and never answers: a Redis that hangs (or a network that drops packets).
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => void sockets.add(socket));
  silent.listen(0, '127.0.0.1');
  await once(silent, 'listening');
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    silent.close();
  });
  const monitor = new DependencyMonitor();
  const heard: string[] = [];
  monitor.listen({ down: (dependency, failure) => heard.push(`${dependency} ${failure.kind}`) });
  const state = new RedisSharedState(`redis://127.0.0.1:${(silent.address() as AddressInfo).port}`, {
    commandTimeoutMs: 200,
    monitor,
  });
  t.teardown(() => state.close());
  for (const operation of [() => state.get('k'), () => state.take('k'), () => state.incrWithTtl('k', 1000)]) {
    const error = await operation().catch((caught: unknown) => caught);
    t.ok(isDependencyUnavailable(error), 'a DependencyUnavailableError');
    t.match(error, { dependency: 'redis', kind: 'timeout' });
  }
  t.same(heard, ['redis timeout'], 'the outage was announced once');
});

t.test('a Redis that refuses connections fails each operation fast as unavailable', async (t) => {
  const state = new RedisSharedState(`redis://127.0.0.1:${await findFreePort()}`, { commandTimeoutMs: 5000 });
  t.teardown(() => state.close());
  const error = await state.setIfAbsent('k', 'v', 1000).catch((caught: unknown) => caught);
  t.match(error, { name: 'DependencyUnavailableError', dependency: 'redis' });
  t.not((error as { kind: string }).kind, 'timeout', 'it gave up on reconnecting before the budget ran out');
});

if (redis.run)
  t.test(
    'with waitReplicas, a one-time write no replica confirmed is refused and its value never handed out',
    async (t) => {
      const prefix = `kptest:${randomUUID()}:`;
      const plain = await new RedisSharedState(REDIS_URL, { prefix }).connect();
      // The shared test Redis has no replica, so WAIT 1 can never be satisfied.
      const waiting = await new RedisSharedState(REDIS_URL, { prefix, waitReplicas: 1, waitTimeoutMs: 20 }).connect();
      t.teardown(async () => {
        await plain.close();
        await waiting.close();
      });
      await plain.set('challenge', 'c-1', 10_000);
      t.match(await waiting.take('challenge').catch((e: unknown) => e), { dependency: 'redis', kind: 'unreplicated' });
      t.equal(await plain.get('challenge'), null, 'consumed on the master, but nobody was given it');
      t.match(await waiting.setIfAbsent('jti', '1', 10_000).catch((e: unknown) => e), { kind: 'unreplicated' });
      t.match(await waiting.incrWithTtl('count', 10_000).catch((e: unknown) => e), { kind: 'unreplicated' });
      t.equal(await waiting.get('jti'), '1', 'reads and plain writes do not wait');
    },
  );
