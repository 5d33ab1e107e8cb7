/**
 * The configured store cannot be used as given: it does not exist (a mistyped `--data`, a data
 * directory without a database, a PostgreSQL database without Keyplane's schema) or cannot be
 * reached. Stops a command (exit 2) before anything is created.
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
