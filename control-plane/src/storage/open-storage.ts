import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlPlaneConfig } from '../../../config/types.js';
import type { DependencyMonitor } from '../../../lib/runtime/dependency-monitor.js';
import { migratePostgres } from './postgres/database.js';
import { openPostgresStorage } from './postgres/index.js';
import { migrations as postgresMigrations } from './postgres/migrations.js';
import { createPool } from './postgres/sql.js';
import { DATABASE_FILE, backupDatabase, migrate as migrateSqlite, openDatabase } from './sqlite/database.js';
import { Database } from './sqlite/driver.js';
import { openSqliteStorage } from './sqlite/index.js';
import { migrations as sqliteMigrations } from './sqlite/migrations.js';
import type { Storage } from './types.js';

type DatabaseSettings = ControlPlaneConfig['database'];

/** What a control plane's storage is chosen from (the timeouts only matter to a server). */
export type StorageConfig = Pick<ControlPlaneConfig, 'dataDir' | 'databaseUrl'> & {
  database: Pick<DatabaseSettings, 'migrateOnStart' | 'poolSize'> &
    Partial<Pick<DatabaseSettings, 'connectTimeoutMs' | 'queryTimeoutMs'>>;
};

/** A server's storage: requests wait on PostgreSQL within `database.*TimeoutMs`, and outages reach the monitor. */
export interface Serving {
  monitor: DependencyMonitor;
}

/**
 * The one storage factory (server, CLI, tests): PostgreSQL when `databaseUrl` is set, otherwise
 * embedded SQLite in the data dir. Pending migrations run first unless `database.migrateOnStart`
 * is off, in which case a schema that is not current is refused. Only a server (`serving`)
 * bounds its statements: an offline command (an audit, a migration) may take as long as it needs.
 */
export async function openStorage(config: StorageConfig, serving?: Serving): Promise<Storage> {
  const { migrateOnStart: migrate, poolSize, connectTimeoutMs, queryTimeoutMs } = config.database;
  if (config.databaseUrl)
    return openPostgresStorage(config.databaseUrl, {
      migrate,
      poolSize,
      ...(serving
        ? {
            monitor: serving.monitor,
            ...(connectTimeoutMs ? { connectTimeoutMs } : {}),
            ...(queryTimeoutMs ? { queryTimeoutMs } : {}),
          }
        : {}),
    });
  return openSqliteStorage(config.dataDir, { migrate });
}

/** Where the storage lives, for messages: never the password. */
export function describeStorage(config: StorageConfig): string {
  if (!config.databaseUrl) return `SQLite ${join(config.dataDir, DATABASE_FILE)}`;
  const url = new URL(config.databaseUrl);
  return `PostgreSQL ${url.hostname}:${url.port || 5432}${url.pathname}`;
}

/** `keyplane migrate`: applies pending migrations and says from which version to which. */
export async function migrateStorage(config: StorageConfig): Promise<{ from: number; to: number }> {
  if (config.databaseUrl) {
    const pool = createPool(config.databaseUrl, 1);
    try {
      return await migratePostgres(pool, postgresMigrations);
    } finally {
      await pool.end();
    }
  }
  if (!existsSync(join(config.dataDir, DATABASE_FILE))) {
    openDatabase(config.dataDir, sqliteMigrations).close();
    return { from: 0, to: Math.max(...sqliteMigrations.map((m) => m.version)) };
  }
  const db = new Database(join(config.dataDir, DATABASE_FILE), { fileMustExist: true });
  try {
    const from = db.pragma('user_version', { simple: true }) as number;
    return { from, to: migrateSqlite(db, sqliteMigrations) };
  } finally {
    db.close();
  }
}

/** The SQLite database file of this config (null on PostgreSQL), for `keyplane backup`. */
export function sqliteDatabaseFile(config: StorageConfig): string | null {
  return config.databaseUrl ? null : join(config.dataDir, DATABASE_FILE);
}

/** `keyplane backup` on SQLite: the online backup API, consistent while the server keeps writing. */
export async function backupSqliteStorage(config: StorageConfig, outFile: string): Promise<{ pages: number }> {
  return backupDatabase(config.dataDir, outFile);
}
