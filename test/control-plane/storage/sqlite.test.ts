import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { DATABASE_FILE, MigrationError, backupDatabase, migrate, openDatabase } from '../../../control-plane/src/storage/sqlite/database.js';
import { migrations } from '../../../control-plane/src/storage/sqlite/migrations.js';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { tempDir } from '../../helpers/build.js';

const latest = Math.max(...migrations.map((m) => m.version));

t.test('migrations run in order at start, once, in WAL mode', async (t) => {
  const dir = tempDir(t);
  const db = openDatabase(dir);
  t.equal(db.pragma('user_version', { simple: true }), latest);
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  db.close();
  const again = openDatabase(dir);
  t.equal(again.pragma('user_version', { simple: true }), latest, 'reopening applies nothing twice');
  again.close();
});

t.test('a later migration applies on top of an older database', async (t) => {
  const db = new Database(':memory:');
  migrate(db, migrations.slice(0, 1));
  t.equal(db.pragma('user_version', { simple: true }), 1);
  const extra = [...migrations, { version: latest + 1, name: 'test column', sql: 'CREATE TABLE test_later (id INTEGER PRIMARY KEY);' }];
  migrate(db, extra);
  t.equal(db.pragma('user_version', { simple: true }), latest + 1);
  t.ok(db.prepare("SELECT name FROM sqlite_master WHERE name = 'test_later'").get());
  db.close();
});

t.test('a failing migration rolls back and leaves the version', async (t) => {
  const db = new Database(':memory:');
  migrate(db, migrations);
  t.throws(() => migrate(db, [...migrations, { version: latest + 1, name: 'broken', sql: 'CREATE TABLE ok_one (id INTEGER); CREATE TABLE;' }]));
  t.equal(db.pragma('user_version', { simple: true }), latest);
  t.notOk(db.prepare("SELECT name FROM sqlite_master WHERE name = 'ok_one'").get());
  db.close();
});

t.test('a database newer than the code is refused', async (t) => {
  const dir = tempDir(t);
  const db = new Database(join(dir, DATABASE_FILE));
  db.pragma(`user_version = ${latest + 7}`);
  db.close();
  t.throws(() => openDatabase(dir), MigrationError);
  t.throws(() => openDatabase(dir), /newer than this Keyplane understands/);
});

t.test('online backup restores into a working store', async (t) => {
  const dir = tempDir(t);
  const storage = openSqliteStorage(dir);
  await storage.keys.insert({ kid: 'k1', alg: 'ES256', state: 'current', publicJwk: { kty: 'EC' }, sealedPrivateJwk: Buffer.from('sealed'), createdAt: 1, activatedAt: 1, retiredAt: null });
  const out = join(tempDir(t), 'backup.db');
  const { pages } = await backupDatabase(dir, out);
  t.ok(pages > 0);
  await storage.keys.insert({ kid: 'k2', alg: 'ES256', state: 'next', publicJwk: { kty: 'EC' }, sealedPrivateJwk: Buffer.from('x'), createdAt: 2, activatedAt: null, retiredAt: null });
  await storage.close();

  const restoredDir = tempDir(t);
  const { copyFileSync } = await import('node:fs');
  copyFileSync(out, join(restoredDir, DATABASE_FILE));
  const restored = openSqliteStorage(restoredDir);
  t.teardown(() => restored.close());
  t.same((await restored.keys.list()).map((k) => k.kid), ['k1'], 'the backup holds what existed when it was taken');
  t.equal(await restored.ping(), true);
});
