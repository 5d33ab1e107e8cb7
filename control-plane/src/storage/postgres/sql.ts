import { createHash } from 'node:crypto';
import pg from 'pg';

/**
 * The one way PostgreSQL stores reach the database. Every statement is sent as a named query,
 * so each connection parses and plans it once and later calls send only the parameters
 * (the name is a hash of the text, so two stores sharing a text share a statement).
 */
export interface Sql {
  rows<R>(text: string, values?: unknown[]): Promise<R[]>;
  /** How many rows the statement touched. */
  count(text: string, values?: unknown[]): Promise<number>;
  /**
   * Runs `work` atomically: a transaction on the pool, a savepoint inside a transaction (so a
   * failed step leaves the caller's transaction usable). `Rollback` undoes it and returns its value.
   */
  atomic<T>(work: (sql: Sql) => Promise<T>): Promise<T>;
}

/** Thrown inside `atomic` to undo what it wrote and answer `value` instead. */
export class Rollback<T> {
  constructor(readonly value: T) {}
}

const names = new Map<string, string>();

function named(text: string, values: unknown[] | undefined): pg.QueryConfig {
  let name = names.get(text);
  if (!name) names.set(text, (name = `kp_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`));
  return { name, text, values: values ?? [] };
}

type Queryable = pg.Pool | pg.PoolClient;

function sqlOn(target: Queryable, atomic: Sql['atomic']): Sql {
  return {
    rows: async <R>(text: string, values?: unknown[]) => (await target.query(named(text, values))).rows as R[],
    count: async (text, values) => (await target.query(named(text, values))).rowCount ?? 0,
    atomic,
  };
}

/** Statements on a connection that is inside a transaction. */
export function clientSql(client: pg.PoolClient): Sql {
  let depth = 0;
  const sql: Sql = sqlOn(client, async (work) => {
    const savepoint = `kp_atomic_${++depth}`;
    await client.query(`SAVEPOINT ${savepoint}`);
    try {
      const result = await work(sql);
      await client.query(`RELEASE SAVEPOINT ${savepoint}`);
      return result;
    } catch (error) {
      await client.query(`ROLLBACK TO SAVEPOINT ${savepoint}`);
      if (error instanceof Rollback) return error.value as never;
      throw error;
    } finally {
      depth--;
    }
  });
  return sql;
}

/**
 * Runs `work` in one READ COMMITTED transaction on one pooled connection. READ COMMITTED is
 * deliberate: every statement sees what other replicas committed before it ran, so a
 * conditional UPDATE (`… WHERE used_at IS NULL`) that waited for another replica's row lock
 * re-checks the committed row and touches nothing, and the sealer sees the epoch the previous
 * holder of its lock sealed.
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch {
      broken = true;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}

/** Statements straight on the pool: each is its own transaction. */
export function poolSql(pool: pg.Pool): Sql {
  return sqlOn(pool, (work) =>
    inTransaction(pool, (client) => work(clientSql(client))).catch((error: unknown) => {
      if (error instanceof Rollback) return error.value;
      throw error;
    }),
  );
}

const INT8 = 20;

/** A pool whose BIGINT columns (epoch milliseconds, counts) come back as numbers, as in SQLite. */
export function createPool(url: string, max: number): pg.Pool {
  return new pg.Pool({
    connectionString: url,
    max,
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

const insertTexts = new Map<string, string>();

/**
 * The INSERT of a row object from rows.ts (its keys are the columns, always in the same order)
 * with `suffix` (ON CONFLICT …, RETURNING …) and its values in column order.
 */
export function insertOf(table: string, row: object, suffix = ''): [string, unknown[]] {
  const key = `${table}|${suffix}`;
  let text = insertTexts.get(key);
  if (!text) {
    const columns = Object.keys(row);
    text = `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})${suffix ? ` ${suffix}` : ''}`;
    insertTexts.set(key, text);
  }
  return [text, Object.values(row)];
}

/** A statement that spends a one-time row: the CTE `spent` marks it, `answer` reports on it. */
export interface SpendStatement {
  spent: string;
  answer: string;
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
    count: async (text, values) => {
      into.push([text, values ?? []]);
      return 1;
    },
    atomic: (work) => work(sql),
  };
  return sql;
}
