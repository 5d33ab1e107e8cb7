/**
 * The migrations written before the ledger, when each store recorded versions instead: SQLite the
 * highest applied in `PRAGMA user_version` (and skipped any lower one merged later, like 10 and 20
 * behind 50), PostgreSQL each applied one in `schema_migrations`. Their ids are these versions as
 * four digits. A store from before the ledger has its ledger filled from that bookkeeping once.
 */
export const LEGACY_VERSIONS = [1, 2, 3, 4, 5, 6, 7, 10, 15, 16, 20, 30, 50, 75, 85, 90] as const;

export const legacyId = (version: number) => String(version).padStart(4, '0');

const LEGACY_IDS = new Set<string>(LEGACY_VERSIONS.map(legacyId));
export const isLegacyId = (id: string) => LEGACY_IDS.has(id);

/**
 * What a release from before the ledger reads as the schema version once a migration it does not
 * know was applied: higher than any of theirs, so they refuse the store as "newer than this
 * Keyplane understands" instead of running on a schema they do not know.
 */
export const PRE_LEDGER_FENCE = 1000;

/**
 * The version releases before the ledger should see: the highest legacy migration applied while
 * only legacy ones are, the fence once any later one is.
 */
export function preLedgerVersion(appliedIds: Iterable<string>): number {
  let highest = 0;
  for (const id of appliedIds) {
    if (!isLegacyId(id)) return PRE_LEDGER_FENCE;
    highest = Math.max(highest, Number(id));
  }
  return highest;
}

/** The newest legacy version, which every newer store is fenced above. */
export const NEWEST_LEGACY_VERSION = Math.max(...LEGACY_VERSIONS);
