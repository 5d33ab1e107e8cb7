import type { ControlPlaneConfig } from '#config/types.js';
import { summarizeMigration } from '../storage/migration-ledger.js';
import {
  assertStoreExists,
  backupSqliteStorage,
  describeStorage,
  migrateStorage,
  sqliteDatabaseFile,
} from '../storage/open-storage.js';

// The operator's database tasks (`keyplane migrate`, `keyplane backup`): what the CLI may call
// instead of opening storage itself (docs/architecture.md#layout).

/** Where the configured database is, for messages: `SQLite <file>` or `PostgreSQL host:port/db`. */
export function describeDatabase(config: ControlPlaneConfig): string {
  return describeStorage(config);
}

/** Applies every missing migration (creating the database when there is none); the lines to print. */
export async function migrateDatabase(config: ControlPlaneConfig): Promise<string[]> {
  return summarizeMigration(describeStorage(config), await migrateStorage(config));
}

/** Refuses a mistyped data directory or database URL: a backup of nothing would look like one. */
export function assertDatabaseExists(config: ControlPlaneConfig): Promise<void> {
  return assertStoreExists(config);
}

/** The SQLite file of the configured store, or null on PostgreSQL. */
export function sqliteFileOf(config: ControlPlaneConfig): string | null {
  return sqliteDatabaseFile(config);
}

/** Copies the SQLite database through its online backup API while the server runs. */
export function backupSqliteDatabase(config: ControlPlaneConfig, outFile: string): Promise<{ pages: number }> {
  return backupSqliteStorage(config, outFile);
}
