import { join } from 'node:path';
import t, { type Test } from 'tap';
import pg from 'pg';
import { Database } from '../../../control-plane/src/storage/sqlite/driver.js';
import { DATABASE_FILE } from '../../../control-plane/src/storage/sqlite/database.js';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { GROUPS_BY_EXTERNAL_ID, USER_BY_NAME } from '../../../control-plane/src/storage/stores/scim-store.js';
import { tempDir } from '../../helpers/build.js';
import { createMigratedTestDatabase, postgresAvailability } from '../../helpers/postgres.js';

// A directory's full sync looks every user up by `userName eq "…"` before it creates one: on
// 10,000 users a scan per look-up is quadratic. These read the plan each backend makes.

/** The plan SQLite makes for `query` (with `$n` parameters) on a freshly migrated store. */
function sqlitePlan(t: Test, query: string, values: string[]): string {
  const dir = tempDir(t);
  openSqliteStorage(dir).close();
  const db = new Database(join(dir, DATABASE_FILE), { readonly: true });
  t.teardown(() => db.close());
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${query.replace(/\$\d/g, '?')}`).all(...values) as Array<{
    detail: string;
  }>;
  return plan.map((row) => row.detail).join('\n');
}

t.test('sqlite: a userName look-up uses the unique index on (org_id, user_name_key)', async (t) => {
  const details = sqlitePlan(t, USER_BY_NAME, ['org_x', 'ann@acme.example']);
  t.match(details, /SEARCH s USING INDEX sqlite_autoindex_scim_users_\d \(org_id=\? AND user_name_key=\?\)/, details);
  t.notMatch(details, /SCAN s\b/);
});

t.test('sqlite: a Group externalId look-up uses its index on (org_id, external_id)', async (t) => {
  const details = sqlitePlan(t, GROUPS_BY_EXTERNAL_ID, ['org_x', 'ext']);
  t.match(details, /SEARCH g USING INDEX scim_groups_by_external_id \(org_id=\? AND external_id=\?\)/, details);
  t.notMatch(details, /SCAN g\b/);
});

const postgres = await postgresAvailability();
t.test('postgres: a userName look-up is an index scan', { skip: postgres.run ? false : postgres.reason }, async (t) => {
  const client = new pg.Client({ connectionString: await createMigratedTestDatabase(t) });
  await client.connect();
  t.teardown(() => client.end());
  // With sequential scans priced out, the planner still picks one only when no index serves the query.
  await client.query('SET enable_seqscan = off');
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${USER_BY_NAME}`, [
    'org_x',
    'ann@acme.example',
  ]);
  const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
  t.match(plan, /Index (Only )?Scan using scim_users_org_id_user_name_key_key on scim_users/, plan);
  t.notMatch(plan, /Seq Scan on scim_users/);
});
