/**
 * Versioned schema changes, applied in order at start. PRAGMA user_version holds the version
 * reached; a database newer than the code is refused rather than guessed at.
 * Never edit a released migration: add the next one.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: Migration[] = [
  {
    version: 1,
    name: 'signing keys',
    sql: `
      CREATE TABLE signing_keys (
        kid TEXT PRIMARY KEY,
        alg TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('next', 'current', 'retired')),
        public_jwk TEXT NOT NULL,
        sealed_private_jwk BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        activated_at INTEGER,
        retired_at INTEGER
      ) STRICT;
    `,
  },
];
