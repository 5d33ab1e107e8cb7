import type pg from 'pg';
import { MigrationError } from '../migration-error.js';
import type { Migration } from '../sqlite/migrations.js';
import { inTransaction } from './sql.js';

// pg_advisory_xact_lock keys: arbitrary constants, distinct per purpose.
export const MIGRATION_LOCK = 0x6b70_0001;
export const SEALING_LOCK = 0x6b70_0002;
/** Held while a control plane changes the SAML key ring, so two replicas never both create one. */
export const SAML_RING_LOCK = 0x6b70_0003;
/** Held while a control plane changes the ES256 signing-key ring (first creation and rotation). */
export const SIGNING_RING_LOCK = 0x6b70_0004;

const latestOf = (migrations: Migration[]) => migrations.reduce((max, m) => Math.max(max, m.version), 0);

async function appliedVersion(client: pg.PoolClient): Promise<number> {
  const { rows } = await client.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
  return Number(rows[0]?.v ?? 0);
}

/**
 * Applies every migration above the database's version, each in its own transaction, under an
 * advisory lock so replicas starting together migrate once. A database newer than the code is
 * refused. Returns the version reached.
 */
export async function migratePostgres(pool: pg.Pool, migrations: Migration[]): Promise<{ from: number; to: number }> {
  const latest = latestOf(migrations);
  // Under the lock too: two replicas issuing CREATE TABLE IF NOT EXISTS at once race on the
  // catalog, and the loser fails (a unique violation, or "type already exists" for the row type).
  await inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
  });
  const from = await currentVersion(pool);
  if (from > latest) throw newerError(from, latest);
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    await inTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      // Read under the lock: another replica may have applied it meanwhile. Each version is
      // looked up by itself, so one merged out of order still applies.
      const done = await client.query('SELECT 1 FROM schema_migrations WHERE version = $1', [migration.version]);
      if (done.rowCount) return;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
    });
  }
  return { from, to: Math.max(latest, from) };
}

/** Refuses a schema that is behind the code (migrations off at start) or ahead of it. */
export async function checkPostgresVersion(pool: pg.Pool, migrations: Migration[]): Promise<void> {
  const latest = latestOf(migrations);
  const current = await currentVersion(pool);
  if (current > latest) throw newerError(current, latest);
  if (current < latest) {
    throw new MigrationError(
      `the database is at schema version ${current}, this Keyplane needs ${latest}; run \`keyplane migrate\` (migrations at start are off)`,
    );
  }
}

async function currentVersion(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t");
  if (!rows[0]?.t) return 0;
  const client = await pool.connect();
  try {
    return await appliedVersion(client);
  } finally {
    client.release();
  }
}

function newerError(current: number, latest: number): MigrationError {
  return new MigrationError(
    `the database is at schema version ${current}, newer than this Keyplane understands (${latest}); run a newer release or restore a backup`,
  );
}
