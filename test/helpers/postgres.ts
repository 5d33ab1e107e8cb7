import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPostgresStorage } from '../../control-plane/src/storage/postgres/index.js';
import { loadMigrations } from '../../control-plane/src/storage/migration-ledger.js';

/** The shared test server (trust auth); each test creates and drops its own database on it. */
export const POSTGRES_URL = process.env['KEYPLANE_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Whether the real-PostgreSQL suites run. Without PostgreSQL they skip with a visible reason,
 * except under KEYPLANE_REQUIRE_ALL=1 (CI), where a missing server is a failure.
 */
export async function postgresAvailability(): Promise<{ run: true } | { run: false; reason: string }> {
  // A missing server refuses at once; the timeout only bounds a hung one. 1.5 s was too tight for a
  // test process still busy loading its modules on a loaded machine (a CI run failed on it).
  const probe = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 10_000 });
  try {
    await probe.connect();
    await probe.query('SELECT 1');
    return { run: true };
  } catch (error) {
    const reason = `PostgreSQL at ${POSTGRES_URL} does not answer (${(error as Error).message})`;
    if (process.env['KEYPLANE_REQUIRE_ALL'] === '1')
      throw new Error(`${reason}, and KEYPLANE_REQUIRE_ALL=1 requires it`, { cause: error });
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

function urlOf(database: string): string {
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * Creates a uniquely named database, empty or a copy of `template`, dropped (with its connections)
 * when `t` ends; returns its URL.
 */
export async function createTestDatabase(t: { teardown(fn: () => unknown): void }, template?: string): Promise<string> {
  const name = `kp_test_${process.pid}_${randomBytes(6).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`));
  t.teardown(() => admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
  return urlOf(name);
}

// Session advisory locks are per database: every test process takes this one on the admin database.
const TEMPLATE_LOCK = 0x6b70_7e01;
let template: Promise<string> | undefined;

/**
 * A database at the latest schema to copy test databases from. `CREATE DATABASE … TEMPLATE` copies
 * files, where replaying the migrations commits once per version (seconds per database on a busy
 * machine). Made once per set of migrations (its name carries their hash) and kept for later runs.
 */
function migratedTemplate(): Promise<string> {
  template ??= admin(async (client) => {
    const ledger = loadMigrations('postgres').map((m) => `${m.id} ${m.checksum}`);
    const name = `kp_template_${createHash('sha256').update(ledger.join('\n')).digest('hex').slice(0, 16)}`;
    const ready = async () =>
      (await client.query('SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate', [name])).rowCount === 1;
    if (await ready()) return name;
    await client.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    try {
      if (await ready()) return name;
      // One left unmarked was being migrated by a run that stopped.
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.query(`CREATE DATABASE ${name}`);
      await (await openPostgresStorage(urlOf(name), { poolSize: 1 })).close();
      // Marked only once migrated and closed: a copy needs a template nobody is connected to.
      await client.query(`ALTER DATABASE ${name} IS_TEMPLATE true`);
      return name;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
    }
  });
  return template;
}

/** Like `createTestDatabase`, already at the latest schema. */
export async function createMigratedTestDatabase(t: { teardown(fn: () => unknown): void }): Promise<string> {
  return createTestDatabase(t, await migratedTemplate());
}
