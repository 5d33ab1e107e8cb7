import type pg from 'pg';
import {
  LEDGER_TABLE,
  label,
  noLedger,
  reportOf,
  safePlan,
  type LedgerEntry,
  type Migration,
  type MigrationReport,
} from '../migration-ledger.js';
import { isLegacyId, legacyId, PRE_LEDGER_FENCE } from '../legacy-versions.js';
import { MIGRATION_LOCK } from '../locks.js';
import { inTransaction } from './sql.js';

/** The table releases before the ledger kept (one row per version applied), still kept for them. */
const PRE_LEDGER_TABLE = 'schema_migrations';

async function exists(db: pg.Pool | pg.PoolClient, table: string): Promise<boolean> {
  const { rows } = await db.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table]);
  return rows[0]?.t != null;
}

async function readLedger(db: pg.Pool | pg.PoolClient): Promise<LedgerEntry[]> {
  return (await db.query<LedgerEntry>(`SELECT id, name, checksum FROM ${LEDGER_TABLE}`)).rows;
}

/**
 * Creates the ledger of a database that has none, under the migration lock: empty for a new
 * database, or one row per version a release before the ledger recorded in schema_migrations
 * (which it kept per version, so nothing was skipped there). Answers whether the database held no
 * tables, and the ids adopted.
 */
async function createLedger(
  client: pg.PoolClient,
  known: Migration[],
): Promise<{ created: boolean; adopted: string[] }> {
  const { rows: tables } = await client.query<{ n: string }>(
    'SELECT count(*) AS n FROM pg_tables WHERE schemaname = current_schema()',
  );
  const created = Number(tables[0]?.n) === 0;
  await client.query(`CREATE TABLE ${LEDGER_TABLE} (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    checksum TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    adopted BOOLEAN NOT NULL
  )`);
  const adopted: string[] = [];
  if (await exists(client, PRE_LEDGER_TABLE)) {
    const { rows } = await client.query<{ version: number; name: string; applied_at: Date }>(
      `SELECT version, name, applied_at FROM ${PRE_LEDGER_TABLE} ORDER BY version`,
    );
    for (const row of rows) {
      if (row.version === PRE_LEDGER_FENCE) continue;
      const id = legacyId(row.version);
      const migration = known.find((m) => m.id === id);
      await client.query(`INSERT INTO ${LEDGER_TABLE} VALUES ($1, $2, $3, $4, true)`, [
        id,
        migration?.name ?? row.name,
        migration?.checksum ?? 'unknown',
        row.applied_at,
      ]);
      adopted.push(migration ? label(migration) : `${id} (${row.name})`);
    }
  } else {
    await client.query(`CREATE TABLE ${PRE_LEDGER_TABLE} (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
  }
  return { created, adopted };
}

/**
 * Applies every migration the ledger lacks, in id order, each in its own transaction under an
 * advisory lock, so replicas starting together apply each once. Refuses a database migrated by a
 * newer release or whose recorded migration changed, before changing anything.
 */
export async function migratePostgres(pool: pg.Pool, known: Migration[]): Promise<MigrationReport> {
  // Under the lock too: two replicas issuing CREATE TABLE at once race on the catalog, and the
  // loser fails (a unique violation, or "type already exists" for the row type).
  const { created, adopted } = await inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    if (await exists(client, LEDGER_TABLE)) return { created: false, adopted: [] };
    const created = await createLedger(client, known);
    // Refused with the adoption rolled back: a refused store is left as it was.
    safePlan(known, await readLedger(client), { pending: true });
    return created;
  });
  const plan = safePlan(known, await readLedger(pool), { pending: true });
  const applied: string[] = [];
  for (const migration of plan.pending) {
    const ran = await inTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      // Read under the lock: another replica may have applied it meanwhile.
      const done = await client.query(`SELECT 1 FROM ${LEDGER_TABLE} WHERE id = $1`, [migration.id]);
      if (done.rowCount) return false;
      await client.query(migration.sql);
      await client.query(`INSERT INTO ${LEDGER_TABLE} VALUES ($1, $2, $3, now(), false)`, [
        migration.id,
        migration.name,
        migration.checksum,
      ]);
      // Releases before the ledger read the highest version here: a legacy migration is recorded
      // as they would have, anything later as the fence they refuse.
      const version = isLegacyId(migration.id) ? Number(migration.id) : PRE_LEDGER_FENCE;
      await client.query(
        `INSERT INTO ${PRE_LEDGER_TABLE} (version, name) VALUES ($1, $2) ON CONFLICT (version) DO NOTHING`,
        [version, isLegacyId(migration.id) ? migration.name : `later migrations: see ${LEDGER_TABLE}`],
      );
      return true;
    });
    if (ran) applied.push(label(migration));
  }
  return reportOf(await readLedger(pool), { created, adopted, applied });
}

/**
 * With migrations at start off: refuses a database whose recorded set is not exactly the code's
 * (missing, unknown or changed migrations), and one without a ledger yet.
 */
export async function checkPostgresSchema(pool: pg.Pool, known: Migration[]): Promise<void> {
  if (!(await exists(pool, LEDGER_TABLE))) throw noLedger(await exists(pool, PRE_LEDGER_TABLE));
  safePlan(known, await readLedger(pool), { pending: false });
}
