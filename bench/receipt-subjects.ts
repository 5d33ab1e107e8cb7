/**
 * bench:receipt-subjects — how long the migration that indexes the ids each receipt names
 * (20261207233018-receipt-subjects) takes on a ledger written before it, on SQLite and
 * PostgreSQL (docs/performance.md#receipt-search-by-any-id).
 *
 * Method: a store migrated up to the migration before it, then RECEIPTS receipts inserted straight
 * into `receipts` as the store wrote them before (a mix of shapes: an account, a session with an
 * actor, a token exchange with nested actors and scopes, an org), then the one migration applied
 * and timed, and the index rows counted.
 *
 * `npx tsx bench/receipt-subjects.ts [--receipts N]` (default 100,000).
 */
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { canonicalReceipt, treeKeyOf } from '#lib/ledger/receipt.js';
import { compareIds, loadMigrations } from '../control-plane/src/storage/migration-ledger.js';
import { openPostgresStorage } from '../control-plane/src/storage/postgres/index.js';
import { openDatabase } from '../control-plane/src/storage/sqlite/database.js';
import { benchTap, log, postgresDatabase } from './harness.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { values: args } = parseArgs({ options: { receipts: { type: 'string' } } });
const RECEIPTS = Number(args.receipts ?? 100_000);
const MIGRATION = '20261207233018';
const AT = Date.parse('2026-12-07T12:00:00.000Z');

function receipt(i: number): { body: string; hash: string; kind: string } {
  const at = new Date(AT + i).toISOString();
  const shapes = [
    { kind: 'account.created', at, outcome: 'success', actor: { type: 'system' }, identityId: `usr_${i}` },
    {
      kind: 'session.started',
      at,
      outcome: 'success',
      actor: { type: 'person', id: `usr_${i}` },
      identityId: `usr_${i}`,
      sessionId: `ses_${i}`,
      deviceId: `dev_${i}`,
      method: 'passkey',
      assurance: 'passkey',
    },
    {
      kind: 'token.exchanged',
      at,
      outcome: 'success',
      actor: { type: 'admin_token' },
      clientId: `cl_${i % 100}`,
      identityId: `usr_${i}`,
      actors: [{ type: 'agent', id: `agt_${i % 10}` }],
      resource: 'https://api.example/v1',
    },
    { kind: 'org.created', at, outcome: 'success', by: 'admin', orgId: `org_${i}` },
  ];
  const r = shapes[i % shapes.length]!;
  return { ...canonicalReceipt(r), kind: r.kind };
}

const { tap, runTeardowns } = benchTap();
log(
  `bench:receipt-subjects — ${RECEIPTS} receipts, Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, load ${loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')}`,
);
const seconds = (started: bigint) => (Number(process.hrtime.bigint() - started) / 1e9).toFixed(2);
try {
  {
    const all = loadMigrations('sqlite');
    const dir = mkdtempSync(join(tmpdir(), 'kp-bench-subjects-'));
    tap.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const db = openDatabase(
      dir,
      all.filter((m) => compareIds(m.id, MIGRATION) < 0),
    );
    const insert = db.prepare('INSERT INTO receipts (hash, tree_key, body, kind, created_at) VALUES (?, ?, ?, ?, ?)');
    db.transaction(() => {
      for (let i = 0; i < RECEIPTS; i++) {
        const r = receipt(i);
        insert.run(r.hash, treeKeyOf(r.hash), r.body, r.kind, AT + i);
      }
    })();
    db.close();
    const started = process.hrtime.bigint();
    const migrated = openDatabase(dir, all);
    const took = seconds(started);
    const rows = (migrated.prepare('SELECT count(*) AS n FROM receipt_subjects').get() as { n: number }).n;
    migrated.close();
    log(`  SQLite: migrated ${RECEIPTS} receipts in ${took} s (${rows} index rows)`);
  }
  const url = await postgresDatabase(tap, 'kp_bench_subjects');
  if (url) {
    const all = loadMigrations('postgres');
    const old = await openPostgresStorage(url, {
      poolSize: 1,
      migrations: all.filter((m) => compareIds(m.id, MIGRATION) < 0),
    });
    await old.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    for (let from = 0; from < RECEIPTS; from += 5000) {
      const batch = Array.from({ length: Math.min(5000, RECEIPTS - from) }, (_, k) => receipt(from + k));
      await client.query(
        `INSERT INTO receipts (hash, tree_key, body, kind, created_at)
         SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::text[], $5::bigint[])`,
        [
          batch.map((r) => r.hash),
          batch.map((r) => treeKeyOf(r.hash)),
          batch.map((r) => r.body),
          batch.map((r) => r.kind),
          batch.map((_, k) => AT + from + k),
        ],
      );
    }
    const started = process.hrtime.bigint();
    const migrated = await openPostgresStorage(url, { poolSize: 1, migrations: all });
    const took = seconds(started);
    await migrated.close();
    const rows = (await client.query<{ n: string }>('SELECT count(*) AS n FROM receipt_subjects')).rows[0]!.n;
    await client.end();
    log(`  PostgreSQL: migrated ${RECEIPTS} receipts in ${took} s (${rows} index rows)`);
  }
} finally {
  await runTeardowns();
}
