import { createHash } from 'node:crypto';
import pg from 'pg';
import { classifyOutage, toDependencyError, type Outage } from '#lib/errors/dependency-outage.js';
import type { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import { Rollback, type Dialect, type SpendStatement, type Sql } from '../sql.js';

export { insertOf, Rollback, type SpendStatement, type Sql } from '../sql.js';

/** PostgreSQL's side of the dialect differences. */
/**
 * The oldest transaction of this database still running when the statement's snapshot was taken
 * (the snapshot's end when none): receipts written by transactions before it can no longer be
 * joined by one that commits later. A running transaction is left out only when
 * `pg_stat_activity` shows it belongs to another database, so another database's long
 * transaction never holds the export back, and one that ended meanwhile, or that the role may not
 * see, still counts (later, never lost).
 */
const RECEIPTS_HORIZON = `(SELECT COALESCE(min(running.xid), pg_snapshot_xmax(pg_current_snapshot()))
      FROM pg_snapshot_xip(pg_current_snapshot()) AS running (xid)
      WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datname <> current_database()
        AND a.backend_xid::text = (running.xid::text::bigint % 4294967296)::text))`;

export const postgresDialect: Dialect = {
  name: 'postgres',
  lock: async (sql, key) => {
    await sql.rows('SELECT pg_advisory_xact_lock($1)', [key]);
  },
  isUniqueViolation: (error) => isUniqueViolation(error),
  least: (a, b) => `LEAST(${a}, ${b})`,
  greatest: (a, b) => `GREATEST(${a}, ${b})`,
  inList: (column, param, type = 'text') => `${column} = ANY(${param}::${type}[])`,
  list: (values) => values,
  forUpdate: 'FOR UPDATE',
  forUpdateSkipLocked: 'FOR UPDATE SKIP LOCKED',
  jsonHas: (column, key) => `jsonb_typeof(${column}::jsonb -> '${key}') <> 'null'`,
  jsonIsTrue: (column, key) => `${column}::jsonb -> '${key}' = 'true'::jsonb`,
  // jsonb `?` on an array: an element equal to the string (exact match, as json_each in SQLite).
  jsonArrayHolds: (column, key, param) => `${column}::jsonb -> '${key}' ? ${param}`,
  receiptsAfter: (param, table) => ({
    where: `(${table}.xid, ${table}.seq) > (COALESCE((SELECT c.xid FROM receipts c WHERE c.seq = ${param}), '0'::xid8), ${param})
      AND ${table}.xid < ${RECEIPTS_HORIZON}`,
    orderBy: `${table}.xid, ${table}.seq`,
  }),
};

/**
 * How statements reach the database: the longest one statement may wait for its answer, and who
 * hears of outages. Migrations and offline tools pass none (no budget); the server passes
 * `database.queryTimeoutMs` and its dependency monitor (docs/scaling.md#postgresql-failover).
 */
export interface Reach {
  /** pg's client-side `query_timeout` per statement; 0 for none. */
  queryTimeoutMs: number;
  monitor?: DependencyMonitor;
}

const UNBOUNDED: Reach = { queryTimeoutMs: 0 };

const names = new Map<string, string>();

function named(text: string, values: unknown[] | undefined, reach: Reach): pg.QueryConfig {
  let name = names.get(text);
  if (!name) names.set(text, (name = `kp_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`));
  return reach.queryTimeoutMs > 0
    ? ({ name, text, values: values ?? [], query_timeout: reach.queryTimeoutMs } as pg.QueryConfig)
    : { name, text, values: values ?? [] };
}

const readOnly = new Map<string, boolean>();

/**
 * A statement that reads and changes nothing: a SELECT (or a WITH of SELECTs) without a
 * locking clause and without a function that writes. Sending it twice is harmless, so one whose
 * connection broke before the answer came is sent again on another connection.
 */
export function isReadOnlyStatement(text: string): boolean {
  let known = readOnly.get(text);
  if (known === undefined) {
    known =
      /^\s*(SELECT|WITH)\b/i.test(text) &&
      !/\b(INSERT|UPDATE|DELETE|MERGE|FOR\s+(NO\s+KEY\s+)?(UPDATE|SHARE)|FOR\s+KEY\s+SHARE|nextval|setval|pg_advisory\w*|pg_notify)\b/i.test(
        text,
      );
    readOnly.set(text, known);
  }
  return known;
}

/** A transaction-control statement (BEGIN, COMMIT, SAVEPOINT …) within the same budget. */
function control(text: string, reach: Reach): pg.QueryConfig {
  return (reach.queryTimeoutMs > 0 ? { text, query_timeout: reach.queryTimeoutMs } : { text }) as pg.QueryConfig;
}

/** Whether a statement that failed with `outage` may go once more on another connection (see `onPool`). */
function mayResend(outage: Outage, text: string): boolean {
  // A statement that timed out already spent the caller's budget.
  return outage.kind !== 'timeout' && (outage.notSent || isReadOnlyStatement(text));
}

/** The error to throw for `error`: an outage as `DependencyUnavailableError` (told to the monitor), anything else as it is. */
function failureOf(reach: Reach, error: unknown): unknown {
  if (error instanceof Rollback) return error;
  return (reach.monitor ? reach.monitor.failure('postgres', error) : toDependencyError('postgres', error)) ?? error;
}

/**
 * A connection from the pool, with an error listener for as long as it is checked out: pg
 * emits `error` on a client whose connection dies, and one checked out has no listener of the
 * pool's, so without this a database that goes away mid-statement would crash the process.
 */
async function checkOut(pool: pg.Pool, reach: Reach): Promise<{ client: pg.PoolClient; done(broken: boolean): void }> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw failureOf(reach, error);
  }
  const onError = () => undefined;
  client.on('error', onError);
  return {
    client,
    done(broken) {
      client.removeListener('error', onError);
      client.release(broken);
    },
  };
}

/**
 * One statement on its own connection from the pool. A connection that breaks is dropped; the
 * statement is sent once more on another only when that cannot do it twice: it never reached
 * the server (pg knew the connection was broken), or it only reads. A write whose answer was
 * lost may have committed, so it is never sent again (a code or refresh token is spent at most
 * once): the caller gets `unavailable`.
 */
async function onPool(pool: pg.Pool, config: pg.QueryConfig, reach: Reach): Promise<pg.QueryResult> {
  for (let attempt = 1; ; attempt++) {
    const { client, done } = await checkOut(pool, reach);
    try {
      const result = await client.query(config);
      done(false);
      reach.monitor?.succeeded('postgres');
      return result;
    } catch (error) {
      const outage = classifyOutage(error);
      // A statement error (a unique violation) leaves the connection usable; an outage does not.
      done(outage !== null);
      if (outage && attempt === 1 && mayResend(outage, config.text)) continue;
      throw failureOf(reach, error);
    }
  }
}

type Target = { pool: pg.Pool } | { client: pg.PoolClient };

function sqlOn(target: Target, atomic: Sql['atomic'], reach: Reach): Sql {
  const query =
    'pool' in target
      ? (text: string, values?: unknown[]) => onPool(target.pool, named(text, values, reach), reach)
      : async (text: string, values?: unknown[]) => {
          try {
            return await target.client.query(named(text, values, reach));
          } catch (error) {
            throw failureOf(reach, error);
          }
        };
  return {
    rows: async <R>(text: string, values?: unknown[]) => (await query(text, values)).rows as R[],
    row: async <R>(text: string, values?: unknown[]) => (await query(text, values)).rows[0] as R | undefined,
    count: async (text, values) => (await query(text, values)).rowCount ?? 0,
    atomic,
    dialect: postgresDialect,
  };
}

/** Statements on a connection that is inside a transaction. */
export function clientSql(client: pg.PoolClient, reach: Reach = UNBOUNDED): Sql {
  let depth = 0;
  const sql: Sql = sqlOn(
    { client },
    async (work) => {
      const savepoint = `kp_atomic_${++depth}`;
      await client.query(control(`SAVEPOINT ${savepoint}`, reach));
      try {
        const result = await work(sql);
        await client.query(control(`RELEASE SAVEPOINT ${savepoint}`, reach));
        return result;
      } catch (error) {
        // A connection that broke has no savepoint to go back to: the transaction is lost anyway.
        if (classifyOutage(error)) throw failureOf(reach, error);
        await client.query(control(`ROLLBACK TO SAVEPOINT ${savepoint}`, reach));
        if (error instanceof Rollback) return error.value as never;
        throw error;
      } finally {
        depth--;
      }
    },
    reach,
  );
  return sql;
}

/**
 * Runs `work` in one READ COMMITTED transaction on one pooled connection. READ COMMITTED is
 * deliberate: every statement sees what other replicas committed before it ran, so a
 * conditional UPDATE (`… WHERE used_at IS NULL`) that waited for another replica's row lock
 * re-checks the committed row and touches nothing, and the sealer sees the epoch the previous
 * holder of its lock sealed.
 *
 * A connection that breaks at BEGIN is replaced once (nothing of `work` has run). One that
 * breaks later is never retried: `work` may have done more than SQL, and a COMMIT whose answer
 * was lost may have landed. The server rolls back what did not commit when the connection goes,
 * so the connection is dropped without a ROLLBACK that could only wait.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  reach: Reach = UNBOUNDED,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const { client, done } = await checkOut(pool, reach);
    try {
      await client.query(control('BEGIN', reach));
    } catch (error) {
      done(true);
      const outage = classifyOutage(error);
      if (attempt === 1 && outage && outage.kind !== 'timeout') continue;
      throw failureOf(reach, error);
    }
    let broken = false;
    try {
      const result = await work(client);
      await client.query(control('COMMIT', reach));
      reach.monitor?.succeeded('postgres');
      return result;
    } catch (error) {
      if (classifyOutage(error)) broken = true;
      else
        try {
          await client.query(control('ROLLBACK', reach));
        } catch {
          broken = true;
        }
      throw failureOf(reach, error);
    } finally {
      done(broken);
    }
  }
}

/** Statements straight on the pool: each is its own transaction. */
export function poolSql(pool: pg.Pool, reach: Reach = UNBOUNDED): Sql {
  return sqlOn(
    { pool },
    (work) =>
      inTransaction(pool, (client) => work(clientSql(client, reach)), reach).catch((error: unknown) => {
        if (error instanceof Rollback) return error.value;
        throw error;
      }),
    reach,
  );
}

const INT8 = 20;

export interface PoolOptions {
  /** Longest a caller waits for a connection, a free one or a new one (pg-pool `connectionTimeoutMillis`); 0 waits on. */
  connectTimeoutMs?: number;
}

/** A pool whose BIGINT columns (epoch milliseconds, counts) come back as numbers, as in SQLite. */
export function createPool(url: string, max: number, options: PoolOptions = {}): pg.Pool {
  return new pg.Pool({
    connectionString: url,
    max,
    ...(options.connectTimeoutMs ? { connectionTimeoutMillis: options.connectTimeoutMs } : {}),
    // TCP keep-alive finds a connection whose server vanished (a failover moved the address).
    keepAlive: true,
    // Timestamps in ms stay far below 2^53, so a number loses nothing.
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8 ? Number : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
}

/** SQLSTATE 23505: a unique constraint refused the row. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === '23505';
}

const GUARD = 'EXISTS (SELECT 1 FROM spent)';

/**
 * Turns a collected write into a CTE that lands only if `spent` marked a row, its parameters
 * numbered from `offset + 1`. Only the two shapes the stores write are taken: an INSERT … VALUES
 * without a suffix (from `insertOf` or written out) and an UPDATE … WHERE (whose SET holds no WHERE).
 */
function guarded(text: string, offset: number): string {
  const renumbered = text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
  const insert = /^INSERT INTO (\w+ \([^)]*\)) VALUES \(([^()]*)\)$/.exec(renumbered);
  if (insert) return `INSERT INTO ${insert[1]} SELECT ${insert[2]} WHERE ${GUARD}`;
  const update = /^(UPDATE \w+ SET .*?) WHERE (.*)$/s.exec(renumbered);
  if (update) return `${update[1]} WHERE ${GUARD} AND (${update[2]})`;
  throw new Error(`this statement cannot go with a spend: ${text.slice(0, 60)}`);
}

/**
 * One statement for a spend and the writes that go with it: every write sees the spend's
 * snapshot and lands only if the spend marked its row, all in the statement's own
 * transaction, so the pair needs no BEGIN and no COMMIT: one round trip.
 */
export function spendWith(
  spend: SpendStatement,
  spendValues: unknown[],
  writes: ReadonlyArray<readonly [string, unknown[]]> = [],
): [string, unknown[]] {
  const values = [...spendValues];
  const ctes = [spend.spent];
  for (const [text, writeValues] of writes) {
    ctes.push(`w${ctes.length} AS (${guarded(text, values.length)})`);
    values.push(...writeValues);
  }
  return [`WITH ${ctes.join(',\n  ')}\n${spend.answer}`, values];
}

/**
 * Where `WritesWithSpend` run on PostgreSQL: their statements are collected, not sent
 * (each reports one row touched), and reads are refused.
 */
export function collectingSql(into: Array<[string, unknown[]]>): Sql {
  const sql: Sql = {
    rows: () => Promise.reject(new Error('only writes can go with a spend')),
    row: () => Promise.reject(new Error('only writes can go with a spend')),
    count: async (text, values) => {
      into.push([text, values ?? []]);
      return 1;
    },
    atomic: (work) => work(sql),
    dialect: postgresDialect,
  };
  return sql;
}
