import t from 'tap';
import { tempDir } from '../helpers/build.js';
import { until } from '../helpers/own-process.js';
import { ownPostgresAvailability, startOwnPostgres } from '../helpers/own-postgres.js';
import { ownRedisAvailability, startOwnRedis } from '../helpers/own-redis.js';
import { call, controlPlaneUnderLoad, unsealedReceipts } from '../helpers/sign-in-load.js';

/**
 * The operator's view (integration tier, slow): a control plane on its own PostgreSQL and Redis
 * under a light sign-in load; each dependency is stopped for a while and started again, and the
 * control plane is never restarted. While one is down every answer is a success or 503
 * `unavailable` with Retry-After (never a 500, never a hang), `/readyz` is 503; once it is back
 * sign-ins succeed again; the log says once that it went away and once that it came back; and
 * every receipt a client was handed is sealed.
 */

const [postgres, redis] = [ownPostgresAvailability(), ownRedisAvailability()];
t.setTimeout(300_000);

if (!postgres.run || !redis.run)
  t.test(
    'dependency outages under load',
    { skip: !postgres.run ? postgres.reason : (redis as { reason: string }).reason },
    () => undefined,
  );
else
  t.test('PostgreSQL and then Redis stopped under a sign-in load, and started again', async (t) => {
    const database = await startOwnPostgres(tempDir(t, 'keyplane-fault-pg-'));
    t.teardown(() => database.stop('immediate'));
    // Redis keeps an append-only file, so what it acknowledged survives its restart, as a
    // persisted Redis would: ceremonies begun before the outage can finish after it.
    const cache = await startOwnRedis(tempDir(t, 'keyplane-fault-redis-'), {
      args: ['--appendonly', 'yes', '--appendfsync', 'always'],
    });
    t.teardown(() => cache.stop());

    const {
      server,
      load,
      log: lines,
    } = await controlPlaneUnderLoad(t, {
      databaseUrl: database.url(),
      redisUrl: cache.url,
      'database.connectTimeoutMs': 1000,
      // A stopped PostgreSQL refuses at once; a slow answer after its restart on a loaded machine
      // (2 s once, in a CI run under a load of 25) must not count as a second outage.
      'database.queryTimeoutMs': 6000,
      // Long enough that a command slowed by a loaded machine (CI runs two test files at once) is
      // not taken for an outage while PostgreSQL is the one down; a stopped Redis refuses at once.
      'redis.commandTimeoutMs': 3000,
    });
    const base = server.url;
    const readiness = async () => (await call(base, '/readyz')).status;

    /** Stops a dependency, watches the answers while it is down, starts it, waits for sign-ins. */
    async function outage(name: string, stop: () => Promise<void>, start: () => Promise<void>): Promise<void> {
      load.phase = `${name} down`;
      const from = lines.length;
      await stop();
      await load.refusals(10);
      t.equal(await readiness(), 503, `/readyz is 503 while ${name} is down`);
      load.phase = `${name} back`;
      await start();
      await load.signIns(10);
      t.equal(await readiness(), 200, `/readyz is 200 once ${name} is back`);
      // The outage is over once the dependency has answered for the settle period.
      await until(`the log says ${name} is back`, async () =>
        lines.slice(from).some((line) => line.event === 'dependency.up' && line.dependency === name) ? true : undefined,
      );
    }

    await load.signIns(10);
    await outage(
      'postgres',
      () => database.stop('fast'),
      () => database.start(),
    );
    await outage(
      'redis',
      () => cache.stop('SIGKILL'),
      () => cache.start(),
    );
    await load.stop();

    t.same(load.unexpected(), [], 'every answer was a success or 503 unavailable with Retry-After: no 500, no hang');
    for (const phase of ['postgres down', 'redis down'])
      t.ok(load.count(phase, 503) >= 10, `${phase}: ${load.count(phase, 503)} answers were 503`);
    for (const phase of ['before', 'postgres back', 'redis back'])
      t.ok(load.completed(phase) >= 10, `${phase}: ${load.completed(phase)} sign-ins completed`);

    const news = lines.filter((line) => typeof line.event === 'string' && line.event.startsWith('dependency.'));
    t.same(
      news.map((line) => `${line.event} ${line.dependency}`),
      ['dependency.down postgres', 'dependency.up postgres', 'dependency.down redis', 'dependency.up redis'],
      'the log says once when each went away and once when it came back',
    );
    t.same(
      lines.filter((line) => line.level >= 50),
      [],
      'no error lines: an outage is not a server bug',
    );
    const metrics = (await fetch(`${base}/metrics`).then((res) => res.text())).split('\n');
    for (const dependency of ['postgres', 'redis'])
      t.ok(
        metrics.some((line) =>
          new RegExp(`^kp_dependency_errors_total\\{dependency="${dependency}"\\} [1-9]`).test(line),
        ),
        `kp_dependency_errors_total counts ${dependency}`,
      );

    t.same(
      await unsealedReceipts(base, load.receipts),
      [],
      `all ${load.receipts.length} receipts handed out are sealed`,
    );
  });
