import t from 'tap';
import { tempDir } from '../helpers/build.js';
import { ownPostgresAvailability, startOwnPostgres, startOwnStandby } from '../helpers/own-postgres.js';
import { call, controlPlaneUnderLoad, unsealedReceipts } from '../helpers/sign-in-load.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

/**
 * A PostgreSQL failover as docs/scaling.md#postgresql-failover describes it (integration tier,
 * slow): a primary with a synchronous streaming standby, both owned by the test, behind a TCP
 * forwarder standing in for the VIP or failover proxy. Under a sign-in load the primary crashes,
 * the address moves to the standby while it is still read-only, and the standby is promoted.
 * Every answer meanwhile is a success or 503 `unavailable` (a write a read-only server refuses
 * too), the pool recovers without a restart, and every receipt a client was handed is sealed on
 * the promoted server: synchronous replication had it there before the client got it.
 */

const postgres = ownPostgresAvailability();
t.setTimeout(300_000);

if (!postgres.run) t.test('PostgreSQL failover', { skip: postgres.reason }, () => undefined);
else
  t.test(
    'a primary crash, the address moved to the standby, the standby promoted: no 500, no receipt lost',
    async (t) => {
      const primary = await startOwnPostgres(tempDir(t, 'keyplane-fault-primary-'), [
        "synchronous_standby_names = '*'",
      ]);
      t.teardown(() => primary.stop('immediate'));
      const standby = await startOwnStandby(tempDir(t, 'keyplane-fault-standby-'), primary);
      t.teardown(() => standby.stop('immediate'));
      const address = await startTcpProxy(primary.port);
      t.teardown(() => address.close());

      const { server, load, log } = await controlPlaneUnderLoad(t, {
        databaseUrl: `postgres://postgres@127.0.0.1:${address.port}/postgres`,
        'database.connectTimeoutMs': 1000,
        'database.queryTimeoutMs': 2000,
      });
      await load.signIns(10);

      load.phase = 'primary down';
      await primary.stop('immediate');
      await load.refusals(5);

      load.phase = 'standby, read-only';
      address.switchTo(standby.port);
      await load.refusals(5);
      t.equal((await call(server.url, '/readyz')).status, 503, 'not ready on a server that takes no writes');

      load.phase = 'promoted';
      await standby.query('SELECT pg_promote()');
      await load.signIns(10);
      t.equal((await call(server.url, '/readyz')).status, 200, 'ready again once promoted');
      await load.stop();

      t.same(load.unexpected(), [], 'every answer was a success or 503 unavailable with Retry-After: no 500, no hang');
      t.same(
        log.filter((line) => line.level >= 50),
        [],
        'no error line in the log',
      );
      t.ok(load.completed('before') >= 10 && load.completed('promoted') >= 10, 'sign-ins before and after');
      t.same(
        await unsealedReceipts(server.url, load.receipts),
        [],
        `all ${load.receipts.length} receipts handed out are sealed`,
      );
    },
  );
