import type { Sqlite } from './database.js';
import type { Statement } from './driver.js';

/**
 * better-sqlite3 is synchronous, so a statement never interleaves with another; a transaction
 * that awaits, however, could let other requests' statements run inside it. The runner makes
 * statements outside a transaction wait while one is open, and gives the transaction a runner
 * of its own that goes straight through.
 */
export class SerialRunner {
  private open: Promise<void> | null = null;

  constructor(readonly db: Sqlite) {}

  run<T>(statement: (db: Sqlite) => T): Promise<T> {
    if (!this.open) return settle(statement, this.db);
    return this.afterOpen().then(() => this.run(statement));
  }

  async transaction<T>(work: (direct: Runner) => Promise<T>): Promise<T> {
    while (this.open) await this.afterOpen();
    let release!: () => void;
    this.open = new Promise((resolve) => (release = resolve));
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = await work({ run: (statement) => settle(statement, this.db) });
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw error;
    } finally {
      this.open = null;
      release();
    }
  }

  private afterOpen(): Promise<void> {
    return this.open ?? Promise.resolve();
  }
}

const statements = new WeakMap<Sqlite, Map<string, Statement>>();

/** Prepares `sql` once per connection and hands back the same statement afterwards. */
export function cached(db: Sqlite, sql: string): Statement {
  let byText = statements.get(db);
  if (!byText) statements.set(db, (byText = new Map()));
  let statement = byText.get(sql);
  if (!statement) byText.set(sql, (statement = db.prepare(sql)));
  return statement;
}

export interface Runner {
  run<T>(statement: (db: Sqlite) => T): Promise<T>;
}

/** Runs a synchronous statement and turns its throw into a rejection, as an async backend would. */
function settle<T>(statement: (db: Sqlite) => T, db: Sqlite): Promise<T> {
  try {
    return Promise.resolve(statement(db));
  } catch (error) {
    return Promise.reject(error);
  }
}
