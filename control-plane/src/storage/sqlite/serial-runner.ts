import type { Sqlite } from './database.js';
import type { Statement } from './driver.js';

/** How many transactions at most share one commit (group commit, see `SerialRunner`). */
const GROUP_LIMIT = 128;

interface Queued {
  work: (direct: Runner) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * better-sqlite3 is synchronous, so a statement never interleaves with another; a transaction
 * that awaits, however, could let other requests' statements run inside it. The runner makes
 * statements outside a transaction wait while one is open, and gives the transaction a runner
 * of its own that goes straight through.
 *
 * Transactions run one after another. Those that queue up while one runs, or during the one
 * turn of the event loop the runner waits before committing, share its commit (group commit): each runs inside its own SAVEPOINT of one `BEGIN IMMEDIATE … COMMIT`, a
 * failing one is rolled back to its savepoint alone, and none of them resolves before the
 * commit that makes it durable. A commit costs a WAL append and its bookkeeping, so under
 * concurrent load this is where most of a short transaction's time went
 * (docs/performance.md#ledger-npm-run-benchledger).
 */
export class SerialRunner {
  private open: Promise<void> | null = null;
  private readonly queue: Queued[] = [];
  private draining = false;
  /** The runner transactions get: statements go straight to the connection. */
  readonly direct: Runner = { run: (statement) => settle(statement, this.db) };

  /** Transaction control, prepared once: `exec` would parse the SQL again every time. */
  private readonly control: Record<'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'undo', Statement>;

  constructor(readonly db: Sqlite) {
    this.control = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT kp_tx'),
      release: db.prepare('RELEASE kp_tx'),
      undo: db.prepare('ROLLBACK TO kp_tx'),
    };
  }

  run<T>(statement: (db: Sqlite) => T): Promise<T> {
    if (!this.open) return settle(statement, this.db);
    return this.afterOpen().then(() => this.run(statement));
  }

  transaction<T>(work: (direct: Runner) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length > 0) await this.runGroup();
    } finally {
      this.draining = false;
    }
  }

  /** One commit for the transactions queued now and those that queue while they run. */
  private async runGroup(): Promise<void> {
    let release!: () => void;
    this.open = new Promise((resolve) => (release = resolve));
    const done: Array<{ item: Queued; value: unknown }> = [];
    const failed: Array<{ item: Queued; error: unknown }> = [];
    try {
      this.control.begin.run();
    } catch (error) {
      for (const item of this.queue.splice(0)) item.reject(error);
      this.open = null;
      release();
      return;
    }
    try {
      for (;;) {
        if (this.queue.length === 0 && done.length + failed.length < GROUP_LIMIT && this.db.inTransaction) {
          // One turn of the event loop before the commit: requests whose I/O is ready now
          // queue their transactions and share it.
          await new Promise((resolve) => setImmediate(resolve));
        }
        if (this.queue.length === 0 || done.length + failed.length >= GROUP_LIMIT) break;
        const item = this.queue.shift()!;
        this.control.savepoint.run();
        try {
          const value = await item.work(this.direct);
          this.control.release.run();
          done.push({ item, value });
        } catch (error) {
          // Some errors (SQLITE_FULL, SQLITE_IOERR…) end the whole transaction: nothing
          // before this one in the group can commit either.
          if (!this.db.inTransaction) {
            failed.push({ item, error });
            for (const earlier of done.splice(0)) failed.push({ item: earlier.item, error });
            break;
          }
          this.control.undo.run();
          this.control.release.run();
          failed.push({ item, error });
        }
      }
      if (this.db.inTransaction) this.control.commit.run();
    } catch (error) {
      // The commit (or a savepoint statement) failed: nothing of the group is durable.
      if (this.db.inTransaction) this.control.rollback.run();
      for (const { item } of done.splice(0)) failed.push({ item, error });
    } finally {
      this.open = null;
      release();
    }
    for (const { item, value } of done) item.resolve(value);
    for (const { item, error } of failed) item.reject(error);
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
