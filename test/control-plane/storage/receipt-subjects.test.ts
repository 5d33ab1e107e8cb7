import t, { type Test } from 'tap';
import pg from 'pg';
import { canonicalReceipt, treeKeyOf } from '#lib/ledger/receipt.js';
import { receiptSubjects } from '#lib/ledger/receipt-subjects.js';
import type { Storage } from '../../../control-plane/src/storage/interface.js';
import { compareIds, loadMigrations, type Dialect } from '../../../control-plane/src/storage/migration-ledger.js';
import { openPostgresStorage } from '../../../control-plane/src/storage/postgres/index.js';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { openDatabase } from '../../../control-plane/src/storage/sqlite/database.js';
import { tempDir } from '../../helpers/build.js';
import { createTestDatabase, postgresAvailability } from '../../helpers/postgres.js';

/**
 * The index of the ids each receipt names (migration 20261207233018-receipt-subjects,
 * docs/events.md#which-ids-a-receipt-names) on both backends: receipts written before the
 * migration (its backfill, in SQL) and after it (the store's append: in TypeScript on SQLite, a
 * trigger on PostgreSQL) hold exactly the ids lib/ledger/receipt-subjects.ts names, and are found by
 * every id they name, exactly as the body scan it replaced found them, in the same order and with
 * the same cursor.
 */
const MIGRATION = '20261207233018';
const AT = Date.parse('2026-12-07T12:00:00.000Z');

/** Receipts of every shape the rules must agree on; `i` varies the ids. */
function receiptsFor(i: number): Array<Record<string, unknown>> {
  const base = { at: new Date(AT + i).toISOString(), outcome: 'success' };
  return [
    { ...base, kind: 'account.created', actor: { type: 'system' }, identityId: `usr_a${i % 3}`, founder: false },
    // `_` is LIKE's wildcard: usr_ab1 must never answer usr_a1 (nor usrXa1).
    { ...base, kind: 'session.started', actor: { type: 'person', id: `usr_ab${i % 2}` }, identityId: `usr_ab${i % 2}` },
    {
      ...base,
      kind: 'token.exchanged',
      actor: { type: 'admin_token' },
      clientId: `cl_${i % 4}`,
      actors: [{ type: 'agent', id: `agt_${i % 2}` }, { sub: 'usr_a1' }],
      resource: 'https://api.example/v1',
      scopes: ['read:all', 'write'],
      count: 3,
    },
    { ...base, kind: 'org.created', by: 'admin', orgId: `org_${i}`, nested: { deeper: [[`team_${i % 2}`]] } },
    // A NUL (jsonb refuses its escape), a non-ASCII value and a sentence: none is an id; the rest still are.
    { ...base, kind: 'mcp.attempt', tool: 'a\u0000b', note: 'é', reason: 'two words', webhookId: `wh_${i % 2}` },
    // An odd actor (an array, a string): only an object's `type` is the envelope.
    { ...base, kind: 'odd.actor', actor: ['person', `usr_x${i % 2}`], streamId: `st_${i}` },
    { ...base, kind: 'odd.actor', actor: 'admin', connectionId: 'conn:1@x.example' },
  ];
}

const SUBJECTS = [
  'usr_a0',
  'usr_a1',
  'usr_a2',
  'usr_ab0',
  'usr_ab1',
  'usr_a',
  'usr%a1',
  'cl_0',
  'cl_3',
  'agt_1',
  'read:all',
  'write',
  'admin',
  'org_4',
  'team_1',
  'wh_0',
  'person',
  'usr_x1',
  'st_2',
  'conn:1@x.example',
  'nobody',
];

/** What the body scan answered: the receipt names the id as a whole JSON string (case as written). */
const scanned = (body: string, subject: string) => body.includes(JSON.stringify(subject));

interface Raw {
  insert(hash: string, body: string, kind: string, createdAt: number): Promise<void>;
  subjectRows(): Promise<Array<{ subject: string; body: string }>>;
}

async function seedOld(raw: Raw, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++)
    for (const receipt of receiptsFor(i)) {
      const { body, hash } = canonicalReceipt(receipt);
      await raw.insert(hash, body, receipt['kind'] as string, AT + i);
    }
}

async function seedNew(storage: Storage, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++)
    await storage.transaction(async (tx) => {
      for (const receipt of receiptsFor(i)) {
        const { body, hash } = canonicalReceipt(receipt);
        await tx.receipts.append(receipt as { kind: string }, hash, AT + i, body);
      }
    });
}

async function pages(storage: Storage, query: { subject?: string; kind?: string; since?: number }, limit: number) {
  const out: Array<{ hash: string; body: string }> = [];
  for (let after = 0; ;) {
    const page = await storage.receipts.list({ ...query, after, limit });
    out.push(...page.map((r) => ({ hash: r.hash, body: r.body })));
    if (page.length < limit) return out;
    after = page.at(-1)!.position;
  }
}

async function checkSameAsScan(t: Test, storage: Storage, raw: Raw): Promise<void> {
  const all = await pages(storage, {}, 1000);
  t.equal(all.length, 20 * 7, 'every receipt is listed');

  // The SQL backfill and the TypeScript append index exactly the ids lib/ledger/receipt-subjects.ts names.
  const rows = await raw.subjectRows();
  const indexed = rows.map((r) => `${JSON.stringify(r.subject)} ${r.body}`).sort();
  const expected = all
    .flatMap((r) => receiptSubjects(JSON.parse(r.body)).map((s) => `${JSON.stringify(s)} ${r.body}`))
    .sort();
  t.same(indexed, expected, 'the index holds the ids each receipt names, before and after the migration');

  for (const subject of SUBJECTS) {
    const want = all.filter((r) => scanned(r.body, subject)).map((r) => r.hash);
    if (subject === 'person') {
      // actor.type is the envelope: the scan matched it, the index does not (documented).
      t.ok(want.length > 0);
      t.same(
        (await pages(storage, { subject }, 3)).map((r) => r.hash),
        all.filter((r) => JSON.parse(r.body).actor?.[0] === 'person').map((r) => r.hash),
        'actor.type is no id; an odd actor array naming "person" still is',
      );
      continue;
    }
    t.same(
      (await pages(storage, { subject }, 3)).map((r) => r.hash),
      want,
      `subject ${subject}: the same receipts as the scan, in the same order, paged 3 at a time`,
    );
  }
  const since = AT + 10;
  t.same(
    (await pages(storage, { subject: 'usr_a1', kind: 'token.exchanged', since }, 2)).map((r) => r.hash),
    all
      .filter((r) => scanned(r.body, 'usr_a1') && JSON.parse(r.body).kind === 'token.exchanged')
      .filter((r) => Date.parse(JSON.parse(r.body).at as string) >= since)
      .map((r) => r.hash),
    'with type and time as well',
  );
  t.same(await pages(storage, { subject: 'success' }, 5), [], 'the envelope is no id');
  t.same(await pages(storage, { subject: 'identityId' }, 5), [], 'a member name is no id');
}

const before = (dialect: Dialect) => loadMigrations(dialect).filter((m) => compareIds(m.id, MIGRATION) < 0);

t.test('sqlite: receipts written before the migration and after it are found by every id they name', async (t) => {
  const dir = tempDir(t);
  const old = openDatabase(dir, before('sqlite'));
  const insert = old.prepare('INSERT INTO receipts (hash, tree_key, body, kind, created_at) VALUES (?, ?, ?, ?, ?)');
  await seedOld(
    {
      insert: async (hash, body, kind, createdAt) => void insert.run(hash, treeKeyOf(hash), body, kind, createdAt),
      subjectRows: async () => [],
    },
    0,
    10,
  );
  old.close();
  const storage = openSqliteStorage(dir);
  t.teardown(() => storage.close());
  await seedNew(storage, 10, 20);
  // A second connection, to read the index itself (already migrated: nothing to apply).
  const db = openDatabase(dir);
  t.teardown(() => db.close());
  await checkSameAsScan(t, storage, {
    insert: async () => undefined,
    subjectRows: async () =>
      db.prepare('SELECT s.subject, r.body FROM receipt_subjects s JOIN receipts r ON r.seq = s.seq').all() as Array<{
        subject: string;
        body: string;
      }>,
  });
});

const postgres = await postgresAvailability();
t.test(
  'postgres: receipts written before the migration and after it are found by every id they name',
  { skip: postgres.run ? false : postgres.reason },
  async (t) => {
    const url = await createTestDatabase(t);
    const old = await openPostgresStorage(url, { poolSize: 1, migrations: before('postgres') });
    await old.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    t.teardown(() => client.end());
    await seedOld(
      {
        insert: async (hash, body, kind, createdAt) =>
          void (await client.query(
            'INSERT INTO receipts (hash, tree_key, body, kind, created_at) VALUES ($1, $2, $3, $4, $5)',
            [hash, treeKeyOf(hash), body, kind, createdAt],
          )),
        subjectRows: async () => [],
      },
      0,
      10,
    );
    const storage = await openPostgresStorage(url, { poolSize: 2 });
    t.teardown(() => storage.close());
    await seedNew(storage, 10, 20);
    await checkSameAsScan(t, storage, {
      insert: async () => undefined,
      subjectRows: async () =>
        (
          await client.query<{ subject: string; body: string }>(
            'SELECT s.subject, r.body FROM receipt_subjects s JOIN receipts r ON r.seq = s.seq AND r.xid = s.xid',
          )
        ).rows,
    });
  },
);
