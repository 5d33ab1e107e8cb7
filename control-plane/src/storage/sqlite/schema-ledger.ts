import { MigrationError } from '../migration-error.js';
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
import { NEWEST_LEGACY_VERSION, legacyId, preLedgerVersion } from '../legacy-versions.js';
import type { Database } from './driver.js';

type Sqlite = Database;

const CREATE_LEDGER = `CREATE TABLE ${LEDGER_TABLE} (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  checksum TEXT NOT NULL,
  applied_at TEXT NOT NULL,
  adopted INTEGER NOT NULL CHECK (adopted IN (0, 1))
) STRICT`;

const hasTable = (db: Sqlite, name: string) =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
const hasIndex = (db: Sqlite, name: string) =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?").get(name) !== undefined;
const hasColumn = (db: Sqlite, table: string, column: string) =>
  db.prepare('SELECT 1 FROM pragma_table_info(?) WHERE name = ?').get(table, column) !== undefined;

/**
 * How to tell that a migration from before the ledger was applied: the first thing it created.
 * `user_version` cannot say: it held only the highest version applied, and a store migrated past
 * a version merged later (50 ahead of 10 and 20) never got it.
 */
const LEGACY_PROBES: Record<number, (db: Sqlite) => boolean> = {
  1: (db) => hasTable(db, 'signing_keys'),
  2: (db) => hasTable(db, 'receipts'),
  3: (db) => hasTable(db, 'identities'),
  4: (db) => hasTable(db, 'totp_secrets'),
  5: (db) => hasTable(db, 'oidc_clients'),
  6: (db) => hasTable(db, 'oidc_codes'),
  7: (db) => hasTable(db, 'gateway_configs'),
  10: (db) => hasIndex(db, 'sessions_by_revoked_at'),
  15: (db) => hasColumn(db, 'oidc_approvals', 'resources'),
  16: (db) => hasColumn(db, 'oidc_grants', 'offline'),
  20: (db) => hasColumn(db, 'identities', 'state'),
  30: (db) => hasTable(db, 'agent_enrollments'),
  50: (db) => hasTable(db, 'orgs'),
  75: (db) => hasTable(db, 'saml_keys'),
  85: (db) => hasTable(db, 'rollout_documents'),
  90: (db) => hasTable(db, 'contacts'),
};

const userVersion = (db: Sqlite) => db.pragma('user_version', { simple: true }) as number;
const isEmpty = (db: Sqlite) =>
  userVersion(db) === 0 && db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table'").get() === undefined;

export function readLedger(db: Sqlite): LedgerEntry[] {
  return db.prepare(`SELECT id, name, checksum FROM ${LEDGER_TABLE}`).all() as LedgerEntry[];
}

/**
 * Creates the ledger of a store that has none: empty for a new store, or filled from what a
 * release before the ledger applied, each migration found by what it created. Answers the ids
 * adopted. Runs inside the caller's write transaction, so two processes never both adopt.
 */
function createLedger(db: Sqlite, known: Migration[], now: string): string[] {
  const version = userVersion(db);
  if (version > NEWEST_LEGACY_VERSION)
    throw new MigrationError(
      `the database is at schema version ${version} without a migration ledger, newer than this Keyplane understands (${NEWEST_LEGACY_VERSION} and its ledger); run a newer release or restore a backup`,
    );
  db.exec(CREATE_LEDGER);
  const insert = db.prepare(`INSERT INTO ${LEDGER_TABLE} VALUES (?, ?, ?, ?, 1)`);
  const adopted: string[] = [];
  for (const [version, applied] of Object.entries(LEGACY_PROBES)) {
    if (!applied(db)) continue;
    const id = legacyId(Number(version));
    const migration = known.find((m) => m.id === id);
    insert.run(id, migration?.name ?? 'before the ledger', migration?.checksum ?? 'unknown', now);
    adopted.push(migration ? label(migration) : id);
  }
  return adopted;
}

/** Creates the migration ledger (adopting what an older release applied) unless another process did meanwhile. */
function createLedgerOnce(db: Sqlite, known: Migration[], clock: () => Date): { created: boolean; adopted: string[] } {
  return db
    .transaction(() => {
      if (hasTable(db, LEDGER_TABLE)) return { created: false, adopted: [] };
      const empty = isEmpty(db);
      const adopted = createLedger(db, known, clock().toISOString());
      // Refused with the adoption undone: a refused store is left as it was.
      safePlan(known, readLedger(db), { pending: true });
      return { created: empty, adopted };
    })
    .immediate();
}

/**
 * Applies every migration the ledger lacks, in id order, each in its own write transaction
 * (BEGIN IMMEDIATE, read again inside: another process may have applied it meanwhile). Refuses a
 * store migrated by a newer release or whose recorded migration changed, before changing anything.
 */
export function migrateSqlite(db: Sqlite, known: Migration[], clock: () => Date = () => new Date()): MigrationReport {
  // Read first, without the write lock: a store that is up to date (every start but the first after
  // an upgrade, and every offline command beside a running server) never waits for a writer.
  const { created, adopted } = hasTable(db, LEDGER_TABLE)
    ? { created: false, adopted: [] }
    : createLedgerOnce(db, known, clock);
  const plan = safePlan(known, readLedger(db), { pending: true });
  const insert = db.prepare(`INSERT INTO ${LEDGER_TABLE} VALUES (?, ?, ?, ?, 0)`);
  const applied: string[] = [];
  for (const migration of plan.pending) {
    const ran = db
      .transaction(() => {
        if (db.prepare(`SELECT 1 FROM ${LEDGER_TABLE} WHERE id = ?`).get(migration.id)) return false;
        db.exec(migration.sql);
        insert.run(migration.id, migration.name, migration.checksum, clock().toISOString());
        return true;
      })
      .immediate();
    if (ran) applied.push(label(migration));
  }
  const ledger = readLedger(db);
  // Releases before the ledger read user_version: keep it telling them what they can run on.
  const fence = preLedgerVersion(ledger.map((entry) => entry.id));
  if (userVersion(db) !== fence) db.pragma(`user_version = ${fence}`);
  return reportOf(ledger, { created, adopted, applied });
}

/**
 * With migrations at start off: refuses a store whose recorded set is not exactly the code's
 * (missing, unknown or changed migrations), and one without a ledger yet.
 */
export function checkSqliteSchema(db: Sqlite, known: Migration[]): void {
  if (!hasTable(db, LEDGER_TABLE)) throw noLedger(!isEmpty(db));
  safePlan(known, readLedger(db), { pending: false });
}
