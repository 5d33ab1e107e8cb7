import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MigrationError } from '../migration-error.js';
import { Database } from './driver.js';
import { migrations as allMigrations, type Migration } from './migrations.js';

export type Sqlite = Database;

export { MigrationError };

export const DATABASE_FILE = 'keyplane.db';

/** WAL pages between automatic checkpoints (about 40 MB of 4 KiB pages). */
export const WAL_CHECKPOINT_PAGES = 10_000;
/** What the WAL file is cut back to when a checkpoint lets it start over (bytes). */
export const WAL_SIZE_LIMIT = 64 * 1024 * 1024;

export function openDatabase(
  dataDir: string,
  migrations: Migration[] = allMigrations,
  options: { migrate?: boolean } = {},
): Sqlite {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const db = new Database(join(dataDir, DATABASE_FILE));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // Checkpoint every WAL_CHECKPOINT_PAGES pages instead of SQLite's 1,000: a page written by
  // many commits (a table's last leaf, an index's newest entries) is copied back once per
  // checkpoint, so fewer checkpoints copy far fewer pages (docs/performance.md#sqlite-checkpoints).
  db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  try {
    if (options.migrate ?? true) migrate(db, migrations);
    else checkVersion(db, migrations);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** Applies every migration above the database's version, each in its own transaction. */
export function migrate(db: Sqlite, migrations: Migration[]): number {
  const latest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > latest) {
    throw new MigrationError(
      `the database is at schema version ${current}, newer than this Keyplane understands (${latest}); run a newer release or restore a backup`,
    );
  }
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    if (migration.version <= current) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    })();
  }
  return latest;
}

/** Refuses a schema that is behind the code (migrations off at start) or ahead of it. */
function checkVersion(db: Sqlite, migrations: Migration[]): void {
  const latest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > latest) migrate(db, migrations);
  if (current < latest) {
    throw new MigrationError(
      `the database is at schema version ${current}, this Keyplane needs ${latest}; run \`keyplane migrate\` (migrations at start are off)`,
    );
  }
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
