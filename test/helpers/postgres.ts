import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The shared test server (trust auth); each test creates and drops its own database on it. */
export const POSTGRES_URL = process.env['KEYPLANE_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Whether the real-PostgreSQL suites run. Without PostgreSQL they skip with a visible reason,
 * except under KEYPLANE_REQUIRE_ALL=1 (CI), where a missing server is a failure.
 */
export async function postgresAvailability(): Promise<{ run: true } | { run: false; reason: string }> {
  const probe = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 1500 });
  try {
    await probe.connect();
    await probe.query('SELECT 1');
    return { run: true };
  } catch (error) {
    const reason = `PostgreSQL at ${POSTGRES_URL} does not answer (${(error as Error).message})`;
    if (process.env['KEYPLANE_REQUIRE_ALL'] === '1') throw new Error(`${reason}, and KEYPLANE_REQUIRE_ALL=1 requires it`, { cause: error });
    return { run: false, reason };
  } finally {
    await probe.end().catch(() => undefined);
  }
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Creates a uniquely named empty database, dropped (with its connections) when `t` ends; returns its URL. */
export async function createTestDatabase(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const name = `kp_test_${process.pid}_${randomBytes(6).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE ${name}`));
  t.teardown(() => admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return url.toString();
}
