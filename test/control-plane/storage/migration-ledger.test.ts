import t from 'tap';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEGACY_VERSIONS, legacyId, preLedgerVersion } from '../../../control-plane/src/storage/legacy-versions.js';
import { MigrationError } from '../../../control-plane/src/storage/migration-error.js';
import {
  compareIds,
  defineMigration,
  loadMigrations,
  MIGRATIONS_DIR,
  migrationChecksum,
  planMigrations,
  refuseUnsafePlan,
} from '../../../control-plane/src/storage/migration-ledger.js';
import { tempDir } from '../../helpers/build.js';

const TIMESTAMP = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)$/;

t.test(
  'the shipped migrations: one file per dialect each, the same ids and names, legacy ids then timestamps',
  async (t) => {
    const sqlite = loadMigrations('sqlite');
    const postgres = loadMigrations('postgres');
    t.same(
      sqlite.map((m) => `${m.id}-${m.name}`),
      postgres.map((m) => `${m.id}-${m.name}`),
    );
    t.same(
      sqlite.filter((m) => m.id.length === 4).map((m) => m.id),
      LEGACY_VERSIONS.map(legacyId),
      'the sixteen migrations of before the ledger keep their versions as ids',
    );
    for (const { id } of sqlite.filter((m) => m.id.length !== 4)) {
      const [, year, month, day, hour, minute, second] = TIMESTAMP.exec(id)!.map(Number) as number[];
      const at = new Date(Date.UTC(year!, month! - 1, day, hour, minute, second));
      t.equal(at.toISOString().replace(/\D/g, '').slice(0, 14), id, `${id} is a real UTC time`);
    }
    t.same(
      sqlite.map((m) => m.id),
      [...sqlite.map((m) => m.id)].sort(compareIds),
      'in id order',
    );
    t.not(sqlite[0]!.sql, postgres[0]!.sql, 'each dialect has its own SQL');
  },
);

const BUILT = join(import.meta.dirname, '../../../dist/control-plane/src/storage/migrations');
t.test(
  'the build ships every migration file in dist/',
  { skip: existsSync(BUILT) ? false : 'no build in dist/ (npm test builds it first)' },
  async (t) => {
    const sources = readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql'));
    for (const file of sources)
      t.equal(readFileSync(join(BUILT, file), 'utf8'), readFileSync(join(MIGRATIONS_DIR, file), 'utf8'), file);
  },
);

t.test('ids compare as numbers: every legacy id sorts ahead of every timestamp', async (t) => {
  t.same(['20261126120000', '0090', '0010', '20251231235959', '0001'].sort(compareIds), [
    '0001',
    '0010',
    '0090',
    '20251231235959',
    '20261126120000',
  ]);
});

t.test('a checksum ignores the line endings a checkout may convert', async (t) => {
  t.equal(migrationChecksum('CREATE TABLE a (x INTEGER);\r\n'), migrationChecksum('CREATE TABLE a (x INTEGER);\n'));
  t.not(migrationChecksum('CREATE TABLE a (x INTEGER);\n'), migrationChecksum('CREATE TABLE a (y INTEGER);\n'));
});

t.test('the loader refuses what it cannot place: a stray name, one dialect only, an id twice', async (t) => {
  const dirWith = (files: Record<string, string>) => {
    const dir = tempDir(t);
    for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
    return dir;
  };
  const pair = { '20261126120000-a.sqlite.sql': 'SELECT 1;\n', '20261126120000-a.postgres.sql': 'SELECT 1;\n' };
  const good = loadMigrations('postgres', dirWith({ ...pair, 'README.md': 'how to add one' }));
  t.same(
    good.map((m) => [m.id, m.name]),
    [['20261126120000', 'a']],
  );
  t.throws(
    () => loadMigrations('sqlite', dirWith({ ...pair, '20261126130000_b.sqlite.sql': '' })),
    /20261126130000_b\.sqlite\.sql is not named <id>-<name>\.<sqlite\|postgres>\.sql/,
  );
  t.throws(
    () => loadMigrations('sqlite', dirWith({ ...pair, '202611261300-b.sqlite.sql': '' })),
    /is not named/,
    'an id is a full timestamp, to the second',
  );
  t.throws(
    () => loadMigrations('postgres', dirWith({ ...pair, '20261126130000-b.sqlite.sql': '' })),
    /migration 20261126130000-b has no postgres file/,
  );
  t.throws(
    () =>
      loadMigrations(
        'sqlite',
        dirWith({ ...pair, '20261126120000-b.sqlite.sql': '', '20261126120000-b.postgres.sql': '' }),
      ),
    /migration id 20261126120000 is used twice/,
  );
  t.throws(
    () => loadMigrations('sqlite', dirWith({ '20261126120000-a.sqlite.sql': '', '20261126120000-b.postgres.sql': '' })),
    /named a for SQLite but b for PostgreSQL/,
  );
  t.throws(() => loadMigrations('sqlite', join(tempDir(t), 'absent')), MigrationError);
});

t.test('the plan compares the whole set: missing ones in id order, changed ones, unknown ones', async (t) => {
  const known = [
    defineMigration('0001', 'one', 'A'),
    defineMigration('0010', 'ten', 'B'),
    defineMigration('0050', 'fifty', 'C'),
    defineMigration('20261126120000', 'later', 'D'),
  ];
  const entry = (m: { id: string; name: string; checksum: string }) => ({
    id: m.id,
    name: m.name,
    checksum: m.checksum,
  });
  // Applied 1 and 50 (the highest legacy one): 10 below it is still missing.
  const plan = planMigrations(known, [entry(known[2]!), entry(known[0]!)]);
  t.same(
    plan.pending.map((m) => m.id),
    ['0010', '20261126120000'],
  );
  t.same(plan.changed, []);
  t.same(plan.unknown, []);
  t.doesNotThrow(() => refuseUnsafePlan(plan, known, { pending: true }));
  t.throws(
    () => refuseUnsafePlan(plan, known, { pending: false }),
    /lacks 2 migration\(s\) this release needs \(0010-ten, 20261126120000-later\)/,
  );

  const changed = planMigrations(known, [{ ...entry(known[1]!), checksum: 'f'.repeat(64) }]);
  t.same(
    changed.changed.map((c) => c.migration.id),
    ['0010'],
  );
  t.throws(
    () => refuseUnsafePlan(changed, known, { pending: true }),
    /migration 0010-ten differs from the one this database recorded \(checksum ffffffffffff… recorded/,
  );

  const newer = planMigrations(known, [
    ...known.map(entry),
    { id: '20270101000000', name: 'future', checksum: 'x' },
    { id: '20261201000000', name: 'sooner', checksum: 'y' },
  ]);
  t.throws(
    () => refuseUnsafePlan(newer, known, { pending: true }),
    /it has migration 20270101000000-future and 1 more, which this release does not know \(its newest is 20261126120000-later\)/,
  );
});

t.test(
  'releases before the ledger see the highest legacy version, or the fence once a later one is applied',
  async (t) => {
    t.equal(preLedgerVersion([]), 0);
    t.equal(preLedgerVersion(['0001', '0050', '0010']), 50);
    t.equal(preLedgerVersion(['0001', '20261126120000']), 1000);
  },
);
