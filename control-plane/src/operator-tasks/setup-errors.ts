import { MasterKeyError } from '../keys/master-key.js';
import { MigrationError } from '../storage/migration-error.js';
import { StoreUnavailableError } from '../storage/store-unavailable-error.js';

/**
 * A store this release may not use as configured (missing, unreachable, migrated by a newer
 * release, a changed migration, sealed under another master key): a setup problem for the operator, not a failure mid-way. Kept
 * apart from operator-tasks/database.ts so that the CLI can tell these apart without loading storage.
 */
export function isDatabaseSetupError(error: unknown): error is Error {
  return error instanceof MigrationError || error instanceof StoreUnavailableError || error instanceof MasterKeyError;
}
