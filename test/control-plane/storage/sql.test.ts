import t, { type Test } from 'tap';
import pg from 'pg';
import { createPool, poolSql } from '../../../control-plane/src/storage/postgres/sql.js';
import { Database } from '../../../control-plane/src/storage/sqlite/driver.js';
import { SerialRunner } from '../../../control-plane/src/storage/sqlite/serial-runner.js';
import { sqliteSql } from '../../../control-plane/src/storage/sqlite/sqlite-sql.js';
import {
  changedOne,
  columnOf,
  firstRow,
  insertOf,
  Rollback,
  type Sql,
} from '../../../control-plane/src/storage/sql.js';
import { createTestDatabase, postgresAvailability } from '../../helpers/postgres.js';

// `Sql` (control-plane/src/storage/sql.ts) is the hand-written layer every store is written once
// against instead of a query builder (docs/architecture.md#hand-written-on-purpose): the same
// statements, helpers and dialect fragments must answer alike on both backends.
const TABLE = `CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER NOT NULL, meta TEXT NOT NULL)`;

function sqlContract(t: Test, open: () => Promise<Sql>) {
  t.test('helpers, atomic and dialect fragments', async (t) => {
    const sql = await open();
    await sql.count(TABLE);
    for (const [id, n, meta] of [
      ['a', 1, { on: true, tags: ['x', 'y'] }],
      ['b', 2, { tags: [] }],
      ['c', 3, { on: false, tags: ['y'] }],
    ] as const)
      await sql.count(...insertOf('items', { id, n, meta: JSON.stringify(meta) }));

    t.same(await firstRow(sql, 'SELECT n FROM items WHERE id = $1', ['b'], (row: { n: number }) => row.n), 2);
    t.equal(await firstRow(sql, 'SELECT n FROM items WHERE id = $1', ['z'], (row: { n: number }) => row.n), null);
    t.same(await columnOf<string>(sql, 'SELECT id FROM items ORDER BY id', [], 'id'), ['a', 'b', 'c']);
    t.ok(await changedOne(sql, 'UPDATE items SET n = n + 10 WHERE id = $1 AND n = $2', ['a', 1]), 'a change');
    t.notOk(await changedOne(sql, 'UPDATE items SET n = n + 10 WHERE id = $1 AND n = $2', ['a', 1]), 'no change');
    // Parameters in another order than they appear.
    t.same(await sql.rows('SELECT id FROM items WHERE n = $2 AND id = $1', ['b', 2]), [{ id: 'b' }]);

    const { dialect } = sql;
    const ids = (where: string, values: unknown[]) =>
      columnOf<string>(sql, `SELECT id FROM items WHERE ${where} ORDER BY id`, values, 'id');
    t.same(await ids(dialect.inList('id', '$1'), [dialect.list(['a', 'c', 'q'])]), ['a', 'c']);
    t.same(await ids(dialect.jsonHas('meta', 'on'), []), ['a', 'c']);
    t.same(await ids(dialect.jsonIsTrue('meta', 'on'), []), ['a']);
    t.same(await ids(dialect.jsonArrayHolds('meta', 'tags', '$1'), ['y']), ['a', 'c']);
    t.same(
      await sql.row(
        `SELECT ${dialect.least('n', '$1')} AS lo, ${dialect.greatest('n', '$1')} AS hi FROM items WHERE id = 'b'`,
        [5],
      ),
      {
        lo: 2,
        hi: 5,
      },
    );

    const duplicate = await sql
      .count(...insertOf('items', { id: 'a', n: 0, meta: '{}' }))
      .catch((error: unknown) => error);
    t.ok(dialect.isUniqueViolation(duplicate), 'a duplicate key is a unique violation');
    t.notOk(dialect.isUniqueViolation(new Error('other')));

    // A savepoint inside a transaction: the inner step is undone, the outer one stays.
    const answer = await sql.atomic(async (outer) => {
      await outer.count('UPDATE items SET n = 100 WHERE id = $1', ['b']);
      const inner = await outer.atomic(async (step) => {
        await step.count('UPDATE items SET n = 200 WHERE id = $1', ['c']);
        throw new Rollback('undone');
      });
      await t.rejects(
        outer.atomic(async (step) => {
          await step.count('DELETE FROM items');
          throw new Error('failed step');
        }),
        { message: 'failed step' },
      );
      return inner;
    });
    t.equal(answer, 'undone');
    t.same(await sql.rows('SELECT id, n FROM items ORDER BY id'), [
      { id: 'a', n: 11 },
      { id: 'b', n: 100 },
      { id: 'c', n: 3 },
    ]);
    t.equal(await sql.atomic((tx) => tx.count("DELETE FROM items WHERE id = 'a'")), 1);
    t.equal(await sql.count('SELECT id FROM items'), 2, 'a committed atomic block stays');
  });
}

const only = process.env['KEYPLANE_TEST_STORAGE'];
if (only !== 'postgres')
  t.test('sqlite', async (t) => {
    const db = new Database(':memory:');
    t.teardown(() => db.close());
    sqlContract(t, async () => sqliteSql(new SerialRunner(db)).outside);
  });

const postgres = only === 'sqlite' ? { run: false as const, reason: 'SQLite only' } : await postgresAvailability();
if (only !== 'sqlite') {
  if (!postgres.run) t.test('postgres', { skip: postgres.reason }, () => undefined);
  else
    t.test('postgres', async (t) => {
      const pool: pg.Pool = createPool(await createTestDatabase(t), 2);
      t.teardown(() => pool.end());
      sqlContract(t, async () => poolSql(pool));
    });
}
