import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MigrationError } from './migration-error.js';

/**
 * The migration ledger (docs/operations.md#upgrades): each schema change is one file per dialect
 * in storage/migrations/, `<id>-<name>.<dialect>.sql`; the store records every one it applied
 * (id, checksum, when) in `schema_ledger`; start-up applies every missing one in id order, whatever
 * the highest applied is. Ids are UTC timestamps (`YYYYMMDDHHMMSS`), so two branches never pick
 * the same one; the sixteen changes made before the ledger keep their old versions as four-digit
 * ids (`0001` … `0090`). Never edit a released migration: its checksum is recorded, and a changed
 * one stops the start. Add a new one instead.
 */
export type Dialect = 'sqlite' | 'postgres';

export interface Migration {
  id: string;
  name: string;
  sql: string;
  /** SHA-256 (hex) of the file's text, line endings normalized to LF. */
  checksum: string;
}

/** One row of the store's ledger. */
export interface LedgerEntry {
  id: string;
  name: string;
  checksum: string;
}

/** What a migration run did, for `keyplane migrate` and the start-up log. */
export interface MigrationReport {
  /** The store held no tables before this run. */
  created: boolean;
  /** Migrations recorded from the bookkeeping of a release before the ledger (`user_version`, `schema_migrations`). */
  adopted: string[];
  /** Migrations applied by this run, in the order they ran (`<id>-<name>`). */
  applied: string[];
  /** Every migration the store has now. */
  total: number;
  /** The newest of them (`<id>-<name>`), or null for none. */
  newest: string | null;
}

/** The ledger table's name on both backends. */
export const LEDGER_TABLE = 'schema_ledger';

export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

const MIGRATION_FILE = /^(\d{4}|\d{14})-([a-z0-9]+(?:-[a-z0-9]+)*)\.(sqlite|postgres)\.sql$/;
/** Files beside the migrations that are not migrations. */
const NOT_MIGRATIONS = new Set(['README.md']);

export const label = (m: { id: string; name: string }) => `${m.id}-${m.name}`;

/** Ids compare as numbers: the four-digit ids of before the ledger sort ahead of every timestamp. */
export const compareIds = (a: string, b: string) =>
  a.length === b.length ? (a < b ? -1 : a > b ? 1 : 0) : a.length - b.length;

export function migrationChecksum(sql: string): string {
  return createHash('sha256').update(sql.replace(/\r\n/g, '\n')).digest('hex');
}

/** A migration from its parts (the loader's, and tests' own lists). */
export function defineMigration(id: string, name: string, sql: string): Migration {
  return { id, name, sql, checksum: migrationChecksum(sql) };
}

const loaded = new Map<string, Migration[]>();

/**
 * Every migration of `dialect` in `dir`, in id order. Refuses a file it cannot place, an id twice,
 * and an id that has no file for the other dialect: each is a packaging mistake that would
 * otherwise show up as two backends with different schemas.
 */
export function loadMigrations(dialect: Dialect, dir: string = MIGRATIONS_DIR): Migration[] {
  const key = `${dialect}\0${dir}`;
  const cached = loaded.get(key);
  if (cached) return cached;
  if (!existsSync(dir))
    throw new MigrationError(
      `no migrations at ${dir}: the build copies control-plane/src/storage/migrations there (npm run build)`,
    );
  const found: Record<Dialect, Map<string, Migration>> = { sqlite: new Map(), postgres: new Map() };
  for (const file of readdirSync(dir).sort()) {
    if (NOT_MIGRATIONS.has(file)) continue;
    const match = MIGRATION_FILE.exec(file);
    if (!match) throw new MigrationError(`${join(dir, file)} is not named <id>-<name>.<sqlite|postgres>.sql`);
    const [, id, name, fileDialect] = match as unknown as [string, string, string, Dialect];
    const same = found[fileDialect];
    const other = same.get(id);
    if (other) throw new MigrationError(`migration id ${id} is used twice (${label(other)} and ${name})`);
    same.set(id, defineMigration(id, name, readFileSync(join(dir, file), 'utf8')));
  }
  for (const id of new Set([...found.sqlite.keys(), ...found.postgres.keys()])) {
    const sqlite = found.sqlite.get(id);
    const postgres = found.postgres.get(id);
    if (!sqlite || !postgres)
      throw new MigrationError(
        `migration ${label((sqlite ?? postgres)!)} has no ${sqlite ? 'postgres' : 'sqlite'} file: every migration has one per dialect`,
      );
    if (sqlite.name !== postgres.name)
      throw new MigrationError(
        `migration ${id} is named ${sqlite.name} for SQLite but ${postgres.name} for PostgreSQL`,
      );
  }
  const migrations = [...found[dialect].values()].sort((a, b) => compareIds(a.id, b.id));
  loaded.set(key, migrations);
  return migrations;
}

export interface MigrationPlan {
  /** Known to the code, not in the ledger: to apply, in id order. */
  pending: Migration[];
  /** In the ledger with a checksum other than the code's file. */
  changed: Array<{ migration: Migration; recorded: string }>;
  /** In the ledger, unknown to the code: the store was migrated by a newer release. */
  unknown: LedgerEntry[];
}

/** Compares the whole set the code knows with the whole set the store recorded (never a highest version). */
export function planMigrations(known: Migration[], ledger: LedgerEntry[]): MigrationPlan {
  const recorded = new Map(ledger.map((entry) => [entry.id, entry]));
  const ids = new Set(known.map((m) => m.id));
  return {
    pending: known.filter((m) => !recorded.has(m.id)).sort((a, b) => compareIds(a.id, b.id)),
    changed: known.flatMap((migration) => {
      const entry = recorded.get(migration.id);
      return entry && entry.checksum !== migration.checksum ? [{ migration, recorded: entry.checksum }] : [];
    }),
    unknown: ledger.filter((entry) => !ids.has(entry.id)).sort((a, b) => compareIds(a.id, b.id)),
  };
}

const newestOf = <T extends { id: string }>(list: T[]): T | undefined =>
  [...list].sort((a, b) => compareIds(a.id, b.id)).at(-1);

/**
 * Refuses a store this code must not run on: one migrated by a newer release (a downgrade), one
 * whose recorded migration differs from the code's file, and, when `pending` is not allowed
 * (migrations at start off), one that lacks any migration the code has.
 */
export function refuseUnsafePlan(plan: MigrationPlan, known: Migration[], options: { pending: boolean }): void {
  const newestUnknown = newestOf(plan.unknown);
  if (newestUnknown) {
    const newestKnown = newestOf(known);
    const more = plan.unknown.length > 1 ? ` and ${plan.unknown.length - 1} more` : '';
    throw new MigrationError(
      `the database was migrated by a newer Keyplane: it has migration ${label(newestUnknown)}${more}, which this release does not know (its newest is ${newestKnown ? label(newestKnown) : 'none'}); run that newer release, or restore the backup taken before the upgrade`,
    );
  }
  const [first] = plan.changed;
  if (first) {
    const names = plan.changed.map((c) => label(c.migration)).join(', ');
    throw new MigrationError(
      `migration ${names} differs from the one this database recorded (checksum ${first.recorded.slice(0, 12)}… recorded, ${first.migration.checksum.slice(0, 12)}… in this release): a migration must not change once released; run a release whose migrations match, and add a new migration for the change`,
    );
  }
  if (!options.pending && plan.pending.length > 0) {
    throw new MigrationError(
      `the database lacks ${plan.pending.length} migration(s) this release needs (${plan.pending.map(label).join(', ')}); run \`keyplane migrate\` (migrations at start are off)`,
    );
  }
}

/** The plan for `ledger`, after `refuseUnsafePlan` let it through. */
export function safePlan(known: Migration[], ledger: LedgerEntry[], options: { pending: boolean }): MigrationPlan {
  const plan = planMigrations(known, ledger);
  refuseUnsafePlan(plan, known, options);
  return plan;
}

/**
 * With migrations at start off, the refusal of a store without a ledger: one that has no schema
 * yet, or one a release before the ledger migrated (`legacy`).
 */
export const noLedger = (legacy: boolean) =>
  new MigrationError(
    legacy
      ? 'the database was last migrated by a release without the migration ledger; run `keyplane migrate` to record and complete its migrations (migrations at start are off)'
      : 'the database has no schema yet; run `keyplane migrate` to create it (migrations at start are off)',
  );

export function reportOf(
  ledger: LedgerEntry[],
  run: { created: boolean; adopted: string[]; applied: string[] },
): MigrationReport {
  const newest = newestOf(ledger);
  return { ...run, total: ledger.length, newest: newest ? label(newest) : null };
}

/**
 * What a migration run did, in lines for a person (`keyplane migrate`, the server's start): a new
 * store is said in one line, so a mistyped path is noticed.
 */
export function summarizeMigration(where: string, report: MigrationReport): string[] {
  const state = `${report.total} migration(s), newest ${report.newest ?? 'none'}`;
  if (report.created) return [`created a new database at ${where} (${state})`];
  const lines: string[] = [];
  if (report.adopted.length > 0)
    lines.push(
      `recorded in the migration ledger the ${report.adopted.length} migration(s) an earlier release applied to ${where}`,
    );
  lines.push(
    report.applied.length > 0
      ? `applied ${report.applied.length} migration(s) to ${where}: ${report.applied.join(', ')} (${state})`
      : `${where} is up to date (${state}); nothing to apply`,
  );
  return lines;
}
