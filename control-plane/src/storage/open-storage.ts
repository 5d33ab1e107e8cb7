import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { ControlPlaneConfig } from '#config/types.js';
import type { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import { classifyOutage } from '#lib/errors/dependency-outage.js';
import { LEDGER_TABLE, loadMigrations, type MigrationReport } from './migration-ledger.js';
import { openPostgresStorage } from './postgres/index.js';
import { migratePostgres } from './postgres/schema-ledger.js';
import { createPool } from './postgres/sql.js';
import { DATABASE_FILE, OFFLINE_BUSY_TIMEOUT_MS, backupDatabase, openDatabase } from './sqlite/database.js';
import { Database } from './sqlite/driver.js';
import { openSqliteStorage } from './sqlite/index.js';
import { StoreUnavailableError } from './store-unavailable-error.js';
import type { Storage } from './interface.js';

type DatabaseSettings = ControlPlaneConfig['database'];

/** What a control plane's storage is chosen from (the timeouts only matter to a server). */
export type StorageConfig = Pick<ControlPlaneConfig, 'dataDir' | 'databaseUrl'> & {
  database: Pick<DatabaseSettings, 'migrateOnStart' | 'poolSize'> &
    Partial<Pick<DatabaseSettings, 'connectTimeoutMs' | 'queryTimeoutMs'>>;
};

export interface OpenStorageOptions {
  /** Told what the migration run at start did (the server logs what it applied). */
  onMigrated?: (report: MigrationReport) => void;
  /**
   * Set by a server only: its requests wait on PostgreSQL within `database.*TimeoutMs` and
   * outages reach the monitor. An offline command (an audit, a migration) may take as long as it needs.
   */
  monitor?: DependencyMonitor;
  /** How long a SQLite connection waits for another process's write lock (milliseconds). */
  busyTimeoutMs?: number;
}

/**
 * The one storage factory (server, CLI, tests): PostgreSQL when `databaseUrl` is set, otherwise
 * embedded SQLite in the data dir. Missing migrations run first unless `database.migrateOnStart`
 * is off, in which case a schema that is not exactly the code's is refused.
 */
export async function openStorage(config: StorageConfig, options: OpenStorageOptions = {}): Promise<Storage> {
  const { migrateOnStart: migrate, poolSize, connectTimeoutMs, queryTimeoutMs } = config.database;
  const onMigrated = options.onMigrated ? { onMigrated: options.onMigrated } : {};
  if (config.databaseUrl) {
    const url = config.databaseUrl;
    const monitor = options.monitor;
    return reachable(config, () =>
      openPostgresStorage(url, {
        migrate,
        poolSize,
        ...onMigrated,
        ...(monitor
          ? {
              monitor,
              ...(connectTimeoutMs ? { connectTimeoutMs } : {}),
              ...(queryTimeoutMs ? { queryTimeoutMs } : {}),
            }
          : {}),
      }),
    );
  }
  return openSqliteStorage(config.dataDir, {
    migrate,
    ...onMigrated,
    ...(options.busyTimeoutMs ? { busyTimeoutMs: options.busyTimeoutMs } : {}),
  });
}

/**
 * Opens a store that must exist already (`ledger audit`, `keys`): a data directory or database
 * that holds no Keyplane schema is refused before anything is created, since an empty store would
 * answer as if it were the real one (`ledger intact: 0 epoch(s)` for a mistyped path).
 */
export async function openExistingStorage(config: StorageConfig): Promise<Storage> {
  await assertStoreExists(config);
  // Offline commands run beside a server that may hold the write lock through a long seal.
  return openStorage(config, { busyTimeoutMs: OFFLINE_BUSY_TIMEOUT_MS });
}

/** Where the storage lives, for messages: never the password. */
export function describeStorage(config: StorageConfig): string {
  if (!config.databaseUrl) return `SQLite ${join(config.dataDir, DATABASE_FILE)}`;
  const url = new URL(config.databaseUrl);
  return `PostgreSQL ${url.hostname}:${url.port || 5432}${url.pathname}`;
}

/**
 * Refuses (StoreUnavailableError) a store that does not exist or holds no Keyplane schema, or a
 * PostgreSQL server that cannot be reached; reads only, creates nothing.
 */
export async function assertStoreExists(config: StorageConfig): Promise<void> {
  if (config.databaseUrl) {
    const found = await reachable(config, () => postgresSchemaTables(config.databaseUrl!));
    if (found === 0)
      throw new StoreUnavailableError(
        `${describeStorage(config)} holds no Keyplane schema: check --database, or run \`keyplane migrate\` to create one there`,
      );
    return;
  }
  const file = join(config.dataDir, DATABASE_FILE);
  const hint = 'check --data, or run `keyplane migrate` to create one there';
  if (!existsSync(config.dataDir))
    throw new StoreUnavailableError(`the data directory ${config.dataDir} does not exist: ${hint}`);
  if (!existsSync(file))
    throw new StoreUnavailableError(
      `there is no Keyplane database in ${config.dataDir} (no ${DATABASE_FILE}): ${hint}`,
    );
  let db: Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    // The ledger, or the first table every release before it created.
    const ours = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN (?, 'signing_keys')")
      .get(LEDGER_TABLE);
    if (!ours) throw new StoreUnavailableError(`${file} holds no Keyplane schema: ${hint}`);
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    throw new StoreUnavailableError(`${file} cannot be read as a SQLite database (${(error as Error).message})`);
  } finally {
    db?.close();
  }
}

/** How many of Keyplane's bookkeeping tables (the ledger, or the table of before it) the database has. */
async function postgresSchemaTables(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      `SELECT (to_regclass($1) IS NOT NULL)::int + (to_regclass('schema_migrations') IS NOT NULL)::int AS n`,
      [LEDGER_TABLE],
    );
    return Number(rows[0]?.n ?? 0);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * A server that will not let us in (no such database, refused credentials) cannot be worked on
 * either; every other way of being unreachable is an outage (lib/errors/dependency-outage.ts).
 */
const REFUSED_CONNECTION_CODES = new Set([
  '28000', // invalid_authorization_specification
  '28P01', // invalid_password
  '3D000', // invalid_catalog_name: no such database
]);

function unreachable(error: unknown): boolean {
  if (classifyOutage(error)) return true;
  const e = error as { code?: string; errors?: unknown[]; message?: string } | null;
  if (!e) return false;
  if (e.code && REFUSED_CONNECTION_CODES.has(e.code)) return true;
  if (Array.isArray(e.errors) && e.errors.some(unreachable)) return true;
  return /timeout expired/.test(e.message ?? '');
}

async function reachable<T>(config: StorageConfig, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!unreachable(error)) throw error;
    const reason = (error as Error).message || (error as { code?: string }).code;
    throw new StoreUnavailableError(`cannot reach ${describeStorage(config)}: ${reason}`, { cause: error });
  }
}

/**
 * `keyplane migrate`: applies every missing migration, creating the store when there is none
 * (`created` in the report says so).
 */
export async function migrateStorage(config: StorageConfig): Promise<MigrationReport> {
  if (config.databaseUrl) {
    const url = config.databaseUrl;
    const pool = createPool(url, 1);
    pool.on('error', () => undefined);
    try {
      return await reachable(config, () => migratePostgres(pool, loadMigrations('postgres')));
    } finally {
      await pool.end();
    }
  }
  const isNew = !existsSync(join(config.dataDir, DATABASE_FILE));
  let report: MigrationReport | undefined;
  openDatabase(config.dataDir, loadMigrations('sqlite'), { onMigrated: (r) => (report = r) }).close();
  return { ...report!, created: isNew || report!.created };
}

/** The SQLite database file of this config (null on PostgreSQL), for `keyplane backup`. */
export function sqliteDatabaseFile(config: StorageConfig): string | null {
  return config.databaseUrl ? null : join(config.dataDir, DATABASE_FILE);
}

/** `keyplane backup` on SQLite: the online backup API, consistent while the server keeps writing. */
export async function backupSqliteStorage(config: StorageConfig, outFile: string): Promise<{ pages: number }> {
  return backupDatabase(config.dataDir, outFile);
}

/**
 * The sealed signing keys of a SQLite backup file, read without writing to it (`keyplane restore`
 * checks the master key against them before it touches anything); null when the file is not a
 * Keyplane store.
 */
export function readSqliteBackupKeys(file: string): Array<{ kid: string; sealedPrivateJwk: Buffer }> | null {
  let db: InstanceType<typeof Database>;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch {
    return null;
  }
  try {
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'signing_keys'").get();
    if (!table) return null;
    const rows = db
      .prepare('SELECT kid, sealed_private_jwk FROM signing_keys ORDER BY created_at, kid')
      .all() as Array<{
      kid: string;
      sealed_private_jwk: Buffer;
    }>;
    return rows.map((row) => ({ kid: row.kid, sealedPrivateJwk: row.sealed_private_jwk }));
  } catch {
    // Not a database at all ("file is not a database"): the caller names the file.
    return null;
  } finally {
    db.close();
  }
}
