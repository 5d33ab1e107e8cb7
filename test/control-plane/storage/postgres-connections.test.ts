import t from 'tap';
import pg from 'pg';
import {
  clientSql,
  createPool,
  inTransaction,
  isReadOnlyStatement,
  isUniqueViolation,
  poolSql,
  type Reach,
} from '../../../control-plane/src/storage/postgres/sql.js';
import { isDependencyUnavailable } from '#lib/errors/dependency-outage.js';
import { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import { findFreePort } from '#lib/runtime/listen.js';
import { until } from '../../helpers/own-process.js';
import { createTestDatabase, postgresAvailability } from '../../helpers/postgres.js';

/**
 * How storage/postgres/sql.ts meets a connection that breaks: the server ends the backend that
 * runs our statement (pg_terminate_backend, what a restart or a failover does to it), a
 * statement outlives its budget, the pool has no connection to give. What may be sent again is
 * sent again; a write never is; the process survives and the pool goes on.
 */

t.test('which statements only read', async (t) => {
  const reads = [
    'SELECT * FROM sessions WHERE id = $1',
    '  with a as (select 1) select * from a',
    'SELECT updated_at, deleted_at FROM x',
  ];
  const writes = [
    'UPDATE sessions SET revoked_at = $1',
    'WITH spent AS (UPDATE codes SET consumed_at = $1 RETURNING *) SELECT * FROM spent',
    'SELECT * FROM receipts FOR UPDATE',
    'SELECT * FROM x FOR NO KEY UPDATE',
    'SELECT pg_advisory_xact_lock($1)',
    "SELECT nextval('s')",
    'INSERT INTO x VALUES (1)',
    'DELETE FROM x',
  ];
  for (const text of reads) t.ok(isReadOnlyStatement(text), text);
  for (const text of writes) t.notOk(isReadOnlyStatement(text), text);
});

const postgres = await postgresAvailability();
if (!postgres.run) t.test('PostgreSQL connection failures', { skip: postgres.reason }, () => undefined);
else
  t.test('PostgreSQL connection failures', async (t) => {
    const url = await createTestDatabase(t);
    const database = new URL(url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    t.teardown(() => admin.end());
    await admin.query('CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0)');
    await admin.query('CREATE TABLE once (id TEXT PRIMARY KEY)');

    const monitor = new DependencyMonitor({ settleMs: 0 });
    const heard: string[] = [];
    monitor.listen({ down: (_dependency, failure) => heard.push(failure.kind), up: () => heard.push('up') });
    const reach: Reach = { queryTimeoutMs: 5000, monitor };
    const pool = createPool(url, 3, { connectTimeoutMs: 2000 });
    pool.on('error', () => undefined);
    t.teardown(() => pool.end());
    const sql = poolSql(pool, reach);

    /** Ends, once, the backend of this database that runs a statement matching `pattern`. */
    const terminateOnce = (pattern: string) =>
      until(`a backend running ${pattern}`, async () => {
        const { rows } = await admin.query(
          `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
           WHERE datname = $1 AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE $2`,
          [database, pattern],
        );
        return rows.length > 0 ? true : undefined;
      });

    t.test('a read whose connection the server ends is sent again on another connection', async (t) => {
      const read = sql.rows<{ n: number }>('SELECT n, pg_sleep(0.5)::text AS slept FROM counter');
      await terminateOnce('%pg_sleep(0.5)%');
      t.same(
        (await read).map((row) => row.n),
        [0],
        'the caller never saw the broken connection',
      );
      t.same(heard, [], 'nothing to announce: no request failed');
    });

    t.test(
      'a write whose connection the server ends is never sent again: unavailable, done at most once',
      async (t) => {
        const write = sql
          .rows(
            'WITH bumped AS (UPDATE counter SET n = n + 1 RETURNING n) SELECT n, pg_sleep(0.6)::text AS slept FROM bumped',
          )
          .catch((caught: unknown) => caught);
        await terminateOnce('%pg_sleep(0.6)%');
        const error = await write;
        t.ok(isDependencyUnavailable(error));
        t.match(error, { dependency: 'postgres', kind: 'failover', detail: '57P01' });
        t.same((await admin.query('SELECT n FROM counter')).rows, [{ n: 0 }], 'rolled back with its connection');
        t.same(heard, ['failover'], 'the outage announced');
        t.same(await sql.rows('SELECT n FROM counter'), [{ n: 0 }], 'the pool answers again');
        t.same(heard, ['failover', 'up'], 'and its end');
      },
    );

    t.test('a transaction whose connection breaks midway fails as unavailable, and the process lives on', async (t) => {
      heard.length = 0;
      const failed = await inTransaction(
        pool,
        async (client) => {
          const inside = clientSql(client, reach);
          await inside.count('UPDATE counter SET n = n + 10');
          const ended = terminateOnce('%pg_sleep(0.7)%');
          await inside.rows('SELECT pg_sleep(0.7)::text AS slept');
          await ended;
          return 'committed';
        },
        reach,
      ).catch((caught: unknown) => caught);
      t.ok(isDependencyUnavailable(failed), 'no uncaught error event took the process down');
      t.same((await admin.query('SELECT n FROM counter')).rows, [{ n: 0 }], 'the server rolled it back');
      t.equal(await sql.atomic(async (inside) => inside.count('UPDATE counter SET n = n + 1')), 1, 'the next runs');
      await admin.query('UPDATE counter SET n = 0');
    });

    t.test(
      'a statement that outlives its budget fails as a timeout, is not sent again, the pool recovers',
      async (t) => {
        heard.length = 0;
        const slow = poolSql(pool, { queryTimeoutMs: 150, monitor });
        const error = await slow.rows('SELECT pg_sleep(3)::text AS slept').catch((caught: unknown) => caught);
        t.match(error, { name: 'DependencyUnavailableError', kind: 'timeout' });
        t.same(heard, ['timeout']);
        t.same(await sql.rows('SELECT 1 AS one'), [{ one: 1 }]);
        const { rows } = await admin.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND query LIKE '%pg_sleep(3)%'",
          [database],
        );
        t.ok(rows.length <= 1, 'sent once: the server may still be finishing it, but no second copy runs');
      },
    );

    t.test('a pool with no connection to give fails within the connection budget', async (t) => {
      const one = createPool(url, 1, { connectTimeoutMs: 150 });
      t.teardown(() => one.end());
      const held = await one.connect();
      const error = await poolSql(one, reach)
        .rows('SELECT 1')
        .catch((caught: unknown) => caught);
      t.match(error, { name: 'DependencyUnavailableError', kind: 'timeout' });
      held.release();
      t.same(await poolSql(one, reach).rows('SELECT 1 AS one'), [{ one: 1 }]);
    });

    t.test('a refusal of the statement is no outage: it passes through as it is', async (t) => {
      heard.length = 0;
      await sql.count('INSERT INTO once (id) VALUES ($1)', ['a']);
      const error = await sql.count('INSERT INTO once (id) VALUES ($1)', ['a']).catch((caught: unknown) => caught);
      t.ok(isUniqueViolation(error), 'still the unique violation the stores look for');
      t.same(heard, []);
    });

    t.test('a database nobody listens for is unavailable at once', async (t) => {
      const gone = createPool(`postgres://postgres@127.0.0.1:${await findFreePort()}/x`, 1, { connectTimeoutMs: 2000 });
      gone.on('error', () => undefined);
      t.teardown(() => gone.end());
      const error = await poolSql(gone, reach)
        .rows('SELECT 1')
        .catch((caught: unknown) => caught);
      t.match(error, { name: 'DependencyUnavailableError', dependency: 'postgres', kind: 'refused' });
      const tx = await inTransaction(gone, async () => 'never', reach).catch((caught: unknown) => caught);
      t.match(tx, { name: 'DependencyUnavailableError', kind: 'refused' });
    });
  });
