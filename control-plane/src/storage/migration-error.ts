/** The schema and the code disagree: stops the process at start (or `keyplane migrate`) with what to do. */
export class MigrationError extends Error {
  override name = 'MigrationError';
}
