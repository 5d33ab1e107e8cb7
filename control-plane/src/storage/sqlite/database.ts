import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MigrationError } from '../migration-error.js';
import { loadMigrations, type Migration, type MigrationReport } from '../migration-ledger.js';
import { Database } from './driver.js';
import { checkSqliteSchema, migrateSqlite } from './schema-ledger.js';

export type Sqlite = Database;

export { MigrationError };

export const DATABASE_FILE = 'keyplane.db';

/** WAL pages between automatic checkpoints (about 40 MB of 4 KiB pages). */
export const WAL_CHECKPOINT_PAGES = 10_000;
/** What the WAL file is cut back to when a checkpoint lets it start over (bytes). */
export const WAL_SIZE_LIMIT = 64 * 1024 * 1024;

/**
 * How long a connection waits for another process's write lock: a server's requests 5 s; an
 * offline command beside a running server (a note-key rotation while it seals) 30 s
 * (OFFLINE_BUSY_TIMEOUT_MS), since failing it is worse than waiting for a long seal to commit.
 */
export const SERVER_BUSY_TIMEOUT_MS = 5_000;
export const OFFLINE_BUSY_TIMEOUT_MS = 30_000;

export function openDatabase(
  dataDir: string,
  migrations: Migration[] = loadMigrations('sqlite'),
  options: { migrate?: boolean; onMigrated?: (report: MigrationReport) => void; busyTimeoutMs?: number } = {},
): Sqlite {
  const file = join(dataDir, DATABASE_FILE);
  const migrate = options.migrate ?? true;
  // Without migrations nothing may create the store: a wrong path is reported, not made.
  if (!migrate && !existsSync(file))
    throw new MigrationError(
      `there is no database at ${file}; run \`keyplane migrate\` to create it (migrations at start are off)`,
    );
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // Checkpoint every WAL_CHECKPOINT_PAGES pages instead of SQLite's 1,000: a page written by
  // many commits (a table's last leaf, an index's newest entries) is copied back once per
  // checkpoint, so fewer checkpoints copy far fewer pages (docs/performance-history.md#sqlite-checkpoints).
  db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? SERVER_BUSY_TIMEOUT_MS}`);
  try {
    if (migrate) {
      const report = migrateSqlite(db, migrations);
      options.onMigrated?.(report);
    } else checkSqliteSchema(db, migrations);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** Online backup through SQLite's backup API: consistent while the server keeps writing. */
export async function backupDatabase(dataDir: string, outFile: string): Promise<{ pages: number }> {
  const db = new Database(join(dataDir, DATABASE_FILE), { fileMustExist: true });
  try {
    const result = await db.backup(outFile);
    return { pages: result.totalPages };
  } finally {
    db.close();
  }
}
