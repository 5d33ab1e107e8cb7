/**
 * The one way stores reach their database, whichever it is. Statements are written once, in
 * the SQL both dialects take, with `$1`-style parameters; what the dialects do differently is
 * behind `dialect` (docs/architecture.md#layout).
 */
export interface Sql {
  rows<R>(text: string, values?: unknown[]): Promise<R[]>;
  /** The first row a reading statement answers (SQLite steps no further than it). */
  row<R>(text: string, values?: unknown[]): Promise<R | undefined>;
  /** How many rows the statement touched. */
  count(text: string, values?: unknown[]): Promise<number>;
  /**
   * Runs `work` atomically: a transaction outside one, a savepoint inside one (so a failed step
   * leaves the caller's transaction usable). `Rollback` undoes it and returns its value.
   */
  atomic<T>(work: (sql: Sql) => Promise<T>): Promise<T>;
  readonly dialect: Dialect;
}

/** What SQLite and PostgreSQL do differently, and nothing else. */
export interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  /**
   * Holds the lock `key` until the transaction ends: PostgreSQL's advisory lock; nothing on
   * SQLite, whose transactions begin IMMEDIATE and so hold the one write lock already.
   */
  lock(sql: Sql, key: number): Promise<void>;
  /** A unique constraint refused the row. */
  isUniqueViolation(error: unknown): boolean;
  /** The smaller of two values (PostgreSQL `LEAST`, SQLite's two-argument `MIN`). */
  least(a: string, b: string): string;
  /** The larger of two values (PostgreSQL `GREATEST`, SQLite's two-argument `MAX`). */
  greatest(a: string, b: string): string;
  /** `column` is one of the list passed as parameter `param`, whose value is `list(values)`. */
  inList(column: string, param: string, type?: 'text' | 'integer'): string;
  list(values: readonly unknown[]): unknown;
  /** Locks the rows a SELECT reads until the transaction ends (nothing on SQLite, see `lock`). */
  readonly forUpdate: string;
  /** As `forUpdate`, passing over rows another transaction holds. */
  readonly forUpdateSkipLocked: string;
  /** The JSON object in text `column` holds `key` with a value other than null. */
  jsonHas(column: string, key: string): string;
  /** The JSON object in text `column` holds `key` with the value true. */
  jsonIsTrue(column: string, key: string): string;
  /** The array under `key` of the JSON object in text `column` holds the string parameter `param`. */
  jsonArrayHolds(column: string, key: string, param: string): string;
  /**
   * The receipts after the one at `seq` parameter `param` (0: from the first), in the order they
   * became visible, and only those no running transaction can still come before: on SQLite, whose
   * writers take turns, `seq` order; on PostgreSQL, (writing transaction, `seq`) up to the oldest
   * transaction still running (migration 20261207201954-receipts-commit-order). `table` is the
   * alias whose `seq` (and on PostgreSQL `xid`) the page follows: `receipts` itself, or
   * `receipt_subjects`, which keeps both (migration 20261207233018-receipt-subjects).
   */
  receiptsAfter(param: string, table: string): { where: string; orderBy: string };
}

/**
 * A PostgreSQL statement that spends a one-time row: the CTE `spent` marks it, `answer` reports
 * on it (stores/oidc-store.ts writes them, postgres/sql.ts `spendWith` fuses writes between them).
 */
export interface SpendStatement {
  spent: string;
  answer: string;
}

/** Thrown inside `atomic` to undo what it wrote and answer `value` instead. */
export class Rollback<T> {
  constructor(readonly value: T) {}
}

const insertTexts = new Map<string, string>();

/**
 * The INSERT of a row object (its keys are the columns, always in the same order) with `suffix`
 * (ON CONFLICT …, RETURNING …) and its values in column order.
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

/** The first row the statement reads, through `map`; null when it reads none. */
export async function firstRow<R, T>(sql: Sql, text: string, values: unknown[], map: (row: R) => T): Promise<T | null> {
  const row = await sql.row<R>(text, values);
  return row ? map(row) : null;
}

/** Whether the statement touched exactly one row (a conditional change that happened). */
export async function changedOne(sql: Sql, text: string, values: unknown[]): Promise<boolean> {
  return (await sql.count(text, values)) === 1;
}

/** The one column `column` of the rows the statement reads. */
export async function columnOf<T>(sql: Sql, text: string, values: unknown[], column: string): Promise<T[]> {
  return (await sql.rows<Record<string, T>>(text, values)).map((row) => row[column]!);
}

/** An outbox's backlog from `SELECT COUNT(*) AS pending, MIN(created_at) AS oldest` (PostgreSQL answers counts as text). */
export function backlogOf(row: { pending: number | string; oldest: number | string | null } | undefined): {
  pending: number;
  oldestCreatedAt: number | null;
} {
  return {
    pending: Number(row?.pending ?? 0),
    oldestCreatedAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest),
  };
}
