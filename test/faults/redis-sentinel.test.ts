import t from 'tap';
import { randomUUID } from 'node:crypto';
import { isDependencyUnavailable } from '#lib/errors/dependency-outage.js';
import { sharedStateSuite } from '../helpers/shared-state-conformance.js';
import { tempDir } from '../helpers/build.js';
import { until } from '../helpers/own-process.js';
import {
  ownRedisAvailability,
  replicationInfo,
  startSentinelSet,
  type OwnSentinelSet,
  openHaState,
} from '../helpers/own-redis.js';
import { call, controlPlaneUnderLoad } from '../helpers/sign-in-load.js';

/**
 * Redis under Sentinel (integration tier, slow): a master, two replicas and three Sentinels the
 * test runs itself. Shared state follows the master through a failover, and with
 * `redis.waitReplicas: 1` what it acknowledged survives the master's crash: a consumed challenge
 * is never handed out again, a replay-cache entry never forgotten, a rate-limit count never
 * lost (docs/scaling.md#redis).
 */

const redis = ownRedisAvailability();
t.setTimeout(300_000);

/**
 * Kills the master (a crash: no chance to hand over) and waits until every Sentinel names the
 * same new master and a replica streams from it, so the failover is over.
 */
async function crashMaster(set: OwnSentinelSet): Promise<number> {
  const old = await set.master();
  await old.stop('SIGKILL');
  return until(
    'the Sentinels promote a replica',
    async () => {
      const named = await Promise.all(
        set.sentinels.map(async (sentinel) => {
          const [, port] = (await sentinel.command('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', set.masterName)) as string[];
          return Number(port);
        }),
      );
      const port = named[0]!;
      if (port === old.port || named.some((other) => other !== port)) return undefined;
      const info = await replicationInfo(set.nodes.find((node) => node.port === port)!);
      const streaming = Object.entries(info).some(
        ([key, value]) => /^slave\d+$/.test(key) && value.includes('state=online'),
      );
      return info['role'] === 'master' && streaming ? port : undefined;
    },
    60_000,
  );
}

if (!redis.run) t.test('Redis Sentinel', { skip: redis.reason }, () => undefined);
else {
  // The conformance run checks what each call does, not how fast: no failover and a long budget.
  const conformance = await startSentinelSet(tempDir(t, 'keyplane-sentinel-'), { downAfterMs: 60_000 });
  t.teardown(() => conformance.close());
  sharedStateSuite('redis sentinel', () => openHaState(conformance, `kptest:${randomUUID()}:`, 15_000));

  t.test('a master crash: what shared state acknowledged holds on the promoted replica', async (t) => {
    const set = await startSentinelSet(tempDir(t, 'keyplane-sentinel-'));
    t.teardown(() => set.close());
    const state = await openHaState(set, 'kp:');
    t.teardown(() => state.close());

    // Challenges stored before the crash, to be taken after it.
    const stored = Array.from({ length: 20 }, () => `challenge:${randomUUID()}`);
    for (const key of stored) t.equal(await state.setIfAbsent(key, 'c', 600_000), true);

    const accepted: string[] = [];
    const taken: string[] = [];
    let counted = 0;
    const unexpected: string[] = [];
    let running = true;
    const attempt = async <T>(work: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await work();
      } catch (error) {
        if (!isDependencyUnavailable(error)) unexpected.push(String(error));
        return undefined;
      }
    };
    const loops = Array.from({ length: 4 }, async () => {
      while (running) {
        const jti = `jti:${randomUUID()}`;
        if ((await attempt(() => state.setIfAbsent(jti, '1', 600_000))) === true) accepted.push(jti);
        const challenge = `challenge:${randomUUID()}`;
        if ((await attempt(() => state.setIfAbsent(challenge, 'c', 600_000))) === true)
          if ((await attempt(() => state.take(challenge))) === 'c') taken.push(challenge);
        if ((await attempt(() => state.incrWithTtl('rate', 600_000))) !== undefined) counted++;
      }
    });
    await until('load before the crash', async () => (accepted.length >= 50 ? true : undefined));
    const before = accepted.length;
    await crashMaster(set);
    await until('load on the new master', async () => (accepted.length >= before + 50 ? true : undefined), 60_000);
    running = false;
    await Promise.all(loops);

    t.same(unexpected, [], 'during the failover every operation succeeded or failed as unavailable');
    let replayed = 0;
    for (const jti of accepted) if ((await state.setIfAbsent(jti, '1', 600_000)) !== false) replayed++;
    t.equal(replayed, 0, `none of ${accepted.length} replay-cache entries was forgotten`);
    let again = 0;
    for (const challenge of taken) if ((await state.take(challenge)) !== null) again++;
    t.equal(again, 0, `none of ${taken.length} consumed challenges came back`);
    const survivors = await Promise.all(stored.map((key) => state.take(key)));
    t.same(new Set(survivors), new Set(['c']), 'challenges stored before the crash are still there, once');
    const { count } = await state.incrWithTtl('rate', 600_000);
    t.ok(count > counted, `the rate-limit count went on from ${counted} acknowledged increments (now ${count})`);
  });

  t.test('sign-ins through a master crash: 503 meanwhile, no sign-in accepted twice, then on as before', async (t) => {
    const set = await startSentinelSet(tempDir(t, 'keyplane-sentinel-'));
    t.teardown(() => set.close());
    const { server, load, log } = await controlPlaneUnderLoad(t, {
      'redis.sentinels': set.addresses,
      'redis.masterName': set.masterName,
      'redis.waitReplicas': 1,
    });
    await load.signIns(10);
    load.phase = 'failover';
    await crashMaster(set);
    load.phase = 'after';
    await load.signIns(10);
    await load.stop();

    t.same(load.unexpected(), [], 'every answer was a success or 503 unavailable: no 500, no hang');
    t.same(
      log.filter((line) => line.level >= 50),
      [],
      'no error line in the log',
    );
    // Each completed sign-in sent again: a 503 is retried (a failover may still be settling),
    // and the answer that comes must be a refusal of the spent challenge.
    const replays: Array<{ status: number; reason?: string }> = [];
    for (const body of load.accepted) {
      let replay = await call(server.url, '/auth/assertion-verify', body);
      for (let tries = 0; replay.status === 503 && tries < 50; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        replay = await call(server.url, '/auth/assertion-verify', body);
      }
      replays.push({ status: replay.status, reason: replay.json.reason });
    }
    t.same(
      replays.filter((replay) => replay.status === 200),
      [],
      `none of ${load.accepted.length} completed sign-ins is accepted again`,
    );
    t.same(new Set(replays.map((replay) => replay.reason)), new Set(['challenge_unknown']));
  });
}
