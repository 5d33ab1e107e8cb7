import { Rollback, type Dialect, type Sql } from '../sql.js';
import type { Sqlite } from './database.js';
import type { Statement } from './driver.js';
import type { Runner, SerialRunner } from './serial-runner.js';

/** SQLite's side of the dialect differences. */
export const sqliteDialect: Dialect = {
  name: 'sqlite',
  // Transactions begin IMMEDIATE: the write lock is held already.
  lock: async () => undefined,
  isUniqueViolation: (error) => {
    const code = (error as { code?: unknown } | null)?.code;
    return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
  },
  least: (a, b) => `MIN(${a}, ${b})`,
  greatest: (a, b) => `MAX(${a}, ${b})`,
  inList: (column, param) => `${column} IN (SELECT value FROM json_each(${param}))`,
  list: (values) => JSON.stringify(values),
  forUpdate: '',
  forUpdateSkipLocked: '',
  jsonHas: (column, key) => `json_extract(${column}, '$.${key}') IS NOT NULL`,
  jsonIsTrue: (column, key) => `json_extract(${column}, '$.${key}') = 1`,
  jsonArrayHolds: (column, key, param) =>
    `EXISTS (SELECT 1 FROM json_each(${column}, '$.${key}') AS e WHERE e.value = ${param})`,
  receiptsAfter: (param, table) => ({ where: `${table}.seq > ${param}`, orderBy: `${table}.seq` }),
};

/** A statement prepared once per text: `$n` became `?`, and `order` picks the values for them. */
interface Prepared {
  statement: Statement;
  reader: boolean;
  /** For each `?`, the index of its value; null when the values are already in order. */
  order: number[] | null;
}

function prepare(db: Sqlite, text: string): Prepared {
  const order: number[] = [];
  const rewritten = text.replace(/\$(\d+)/g, (_, n: string) => {
    order.push(Number(n) - 1);
    return '?';
  });
  const statement = db.prepare(rewritten);
  return { statement, reader: statement.reader, order: order.every((n, i) => n === i) ? null : order };
}

/**
 * `Sql` over better-sqlite3: each text prepared once (`$n` rewritten to `?` once), statements run
 * through the serial runner, so a transaction's statements never interleave with others'.
 * `atomic` is a transaction of the runner outside one and a savepoint inside one.
 */
export function sqliteSql(runner: SerialRunner): { outside: Sql; inside: Sql } {
  const db = runner.db;
  const prepared = new Map<string, Prepared>();
  const statementOf = (text: string) => {
    let found = prepared.get(text);
    if (!found) prepared.set(text, (found = prepare(db, text)));
    return found;
  };
  const args = (p: Prepared, values: unknown[] | undefined): unknown[] =>
    !values ? [] : p.order ? p.order.map((i) => values[i]) : values;
  const on = (run: Runner, atomic: Sql['atomic']): Sql => ({
    rows: <R>(text: string, values?: unknown[]) =>
      run.run(() => {
        const p = statementOf(text);
        if (!p.reader) {
          p.statement.run(...args(p, values));
          return [] as R[];
        }
        return p.statement.all(...args(p, values)) as R[];
      }),
    row: <R>(text: string, values?: unknown[]) =>
      run.run(() => {
        const p = statementOf(text);
        return p.statement.get(...args(p, values)) as R | undefined;
      }),
    count: (text, values) =>
      run.run(() => {
        const p = statementOf(text);
        return p.reader ? p.statement.all(...args(p, values)).length : p.statement.run(...args(p, values)).changes;
      }),
    atomic,
    dialect: sqliteDialect,
  });
  let depth = 0;
  const inside: Sql = on(runner.direct, async (work) => {
    const savepoint = `kp_atomic_${++depth}`;
    statementOf(`SAVEPOINT ${savepoint}`).statement.run();
    try {
      const result = await work(inside);
      statementOf(`RELEASE ${savepoint}`).statement.run();
      return result;
    } catch (error) {
      if (db.inTransaction) {
        statementOf(`ROLLBACK TO ${savepoint}`).statement.run();
        statementOf(`RELEASE ${savepoint}`).statement.run();
      }
      if (error instanceof Rollback) return error.value as never;
      throw error;
    } finally {
      depth--;
    }
  });
  const outside: Sql = on(runner, (work) =>
    runner
      .transaction(() => work(inside))
      .catch((error: unknown) => {
        if (error instanceof Rollback) return error.value as never;
        throw error;
      }),
  );
  return { outside, inside };
}
