import t from 'tap';
import { randomUUID } from 'node:crypto';
import { isDependencyUnavailable } from '#lib/errors/dependency-outage.js';
import { sharedStateSuite } from '../helpers/shared-state-conformance.js';
import { tempDir } from '../helpers/build.js';
import { until } from '../helpers/own-process.js';
import { ownRedisAvailability, replicationInfo, startCluster, openHaState } from '../helpers/own-redis.js';
import { call, controlPlaneUnderLoad } from '../helpers/sign-in-load.js';

/**
 * Redis Cluster (integration tier, slow): three masters with a replica each, run by the test.
 * Every shared-state operation names one key, so no hash tag is needed; the Lua counter and the
 * WAIT that follows a one-time write go to the node that owns the key (docs/scaling.md#redis).
 */

const redis = ownRedisAvailability();
t.setTimeout(300_000);

if (!redis.run) t.test('Redis Cluster', { skip: redis.reason }, () => undefined);
else {
  const cluster = await startCluster(tempDir(t, 'keyplane-cluster-'));
  t.teardown(() => cluster.close());
  sharedStateSuite('redis cluster', () => openHaState(cluster, `kptest:${randomUUID()}:`, 15_000));

  t.test('sign-ins on a Cluster, with one-time values spread over its masters', async (t) => {
    const { server, load } = await controlPlaneUnderLoad(
      t,
      { 'redis.clusterNodes': cluster.addresses, 'redis.waitReplicas': 1 },
      2,
    );
    await load.signIns(10);
    await load.stop();
    t.same(load.unexpected(), []);
    for (const body of load.accepted.slice(0, 5))
      t.match(await call(server.url, '/auth/assertion-verify', body), {
        status: 400,
        json: { reason: 'challenge_unknown' },
      });
  });

  t.test(
    'a master of the Cluster crashes: its replica takes its slots over, nothing acknowledged is lost',
    async (t) => {
      const state = await openHaState(cluster, `kptest:${randomUUID()}:`);
      t.teardown(() => state.close());
      const accepted: string[] = [];
      const unexpected: string[] = [];
      let running = true;
      const loops = Array.from({ length: 4 }, async () => {
        while (running) {
          const jti = `jti:${randomUUID()}`;
          try {
            if (await state.setIfAbsent(jti, '1', 600_000)) accepted.push(jti);
          } catch (error) {
            if (!isDependencyUnavailable(error)) unexpected.push(String(error));
          }
        }
      });
      await until('load before the crash', async () => (accepted.length >= 100 ? true : undefined));
      const masters: typeof cluster.nodes = [];
      for (const node of cluster.nodes) if ((await replicationInfo(node))['role'] === 'master') masters.push(node);
      const victim = masters[0]!;
      const heirs: typeof cluster.nodes = [];
      for (const node of cluster.nodes)
        if ((await replicationInfo(node))['master_port'] === String(victim.port)) heirs.push(node);
      const before = accepted.length;
      await victim.stop('SIGKILL');
      // Every node said cluster_state:ok before it noticed the crash: wait for the promotion itself.
      await until(
        "the victim's replica is a master, and the cluster is whole again",
        async () => {
          if (!(await Promise.all(heirs.map(replicationInfo))).some((info) => info['role'] === 'master'))
            return undefined;
          for (const node of cluster.nodes)
            if (node.running && !String(await node.command('CLUSTER', 'INFO')).includes('cluster_state:ok'))
              return undefined;
          return true;
        },
        60_000,
      );
      // Writes to the promoted replica's slots wait out the replica confirmation (it has none left) and
      // fail as unavailable; the other masters' slots go on taking load.
      await until('load after the failover', async () => (accepted.length >= before + 50 ? true : undefined), 60_000);
      running = false;
      await Promise.all(loops);
      t.same(unexpected, [], 'every operation succeeded or failed as unavailable');
      // Read back rather than written again: the promoted replica has no replica of its own
      // now, so a one-time write to its slots fails (503) until the crashed node returns as one.
      // A read may still time out while the client learns the new slot map on a loaded machine:
      // each is tried again until it answers (a missing entry answers too, and counts).
      const readBack = async (jti: string) =>
        (await until('the entry reads back', async () => (await state.get(jti)) ?? null, 60_000)) === '1';
      let forgotten = 0;
      for (let i = 0; i < accepted.length; i += 50)
        forgotten += (await Promise.all(accepted.slice(i, i + 50).map(readBack))).filter((read) => !read).length;
      t.equal(forgotten, 0, `none of ${accepted.length} replay-cache entries was forgotten`);
    },
  );
}
