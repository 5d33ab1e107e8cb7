import t from 'tap';
import { Database } from '../../../control-plane/src/storage/sqlite/driver.js';
import { join } from 'node:path';
import { SignJWT, createLocalJWKSet, jwtVerify } from 'jose';
import { statSync } from 'node:fs';
import { deriveMasterKey } from '#lib/crypto/sealed-box.js';
import { KeyRing, rotationPolicy } from '../../../control-plane/src/keys/key-ring.js';
import { resolveMasterKey } from '../../../control-plane/src/keys/master-key.js';
import { DATABASE_FILE } from '../../../control-plane/src/storage/sqlite/database.js';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import { manualClock, tempDir } from '../../helpers/build.js';

const DAY = 86_400_000;

async function ring(
  t: Parameters<typeof tempDir>[0],
  now: () => number,
  dir = tempDir(t),
  master = 'a-master-key-that-is-long-enough-0123456789',
) {
  const storage = openSqliteStorage(dir);
  t.teardown(() => storage.close());
  const keyRing = new KeyRing(
    storage,
    deriveMasterKey(master),
    rotationPolicy({ rotateEveryDays: 90, retainRetiredDays: 30 }),
    now,
  );
  await keyRing.ensure();
  return { keyRing, storage, dir };
}

async function sign(keyRing: KeyRing, now: () => number): Promise<string> {
  const { kid, privateKey } = keyRing.current();
  return new SignJWT({ sub: 'usr_1' })
    .setProtectedHeader({ alg: 'ES256', kid })
    .setIssuedAt(Math.floor(now() / 1000))
    .setExpirationTime(Math.floor(now() / 1000) + 600)
    .sign(privateKey);
}

t.test('a fresh ring publishes current and next; no private part in the JWKS', async (t) => {
  const clock = manualClock();
  const { keyRing } = await ring(t, clock.now);
  const { keys } = keyRing.jwks();
  t.equal(keys.length, 2);
  for (const jwk of keys) {
    t.same(Object.keys(jwk).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    t.equal(jwk.alg, 'ES256');
    t.notOk('d' in jwk, 'no private scalar');
  }
  t.ok(keys.some((k) => k.kid === keyRing.current().kid));
});

t.test('the next key is in the JWKS before it signs anything', async (t) => {
  const clock = manualClock();
  const { keyRing } = await ring(t, clock.now);
  const publishedBefore = keyRing.jwks().keys.map((k) => k.kid);
  const signingBefore = keyRing.current().kid;
  const next = publishedBefore.find((kid) => kid !== signingBefore)!;
  clock.advance(DAY);
  const result = await keyRing.rotate();
  t.equal(result.current, next, 'the published next key is the one that starts signing');
  t.equal(keyRing.current().kid, next);
  t.ok(publishedBefore.includes(keyRing.current().kid));
});

t.test('a token signed before rotation still verifies after it', async (t) => {
  const clock = manualClock();
  const { keyRing } = await ring(t, clock.now);
  const token = await sign(keyRing, clock.now);
  clock.advance(60_000);
  await keyRing.rotate();
  const jwks = createLocalJWKSet(keyRing.jwks());
  const { payload, protectedHeader } = await jwtVerify(token, jwks, { currentDate: new Date(clock.now()) });
  t.equal(payload.sub, 'usr_1');
  t.not(protectedHeader.kid, keyRing.current().kid, 'signed by the now-retired key');
  const fresh = await sign(keyRing, clock.now);
  t.ok(await jwtVerify(fresh, jwks, { currentDate: new Date(clock.now()) }));
});

t.test('the schedule rotates when due and drops retired keys after retention', async (t) => {
  const clock = manualClock();
  const { keyRing } = await ring(t, clock.now);
  const first = keyRing.current().kid;
  clock.advance(89 * DAY);
  await keyRing.ensure();
  t.equal(keyRing.current().kid, first, 'not yet due');
  clock.advance(DAY);
  await keyRing.ensure();
  t.not(keyRing.current().kid, first, 'rotated on schedule');
  t.ok(
    keyRing.jwks().keys.some((k) => k.kid === first),
    'retired key still published',
  );
  t.ok(keyRing.publicKey(first), 'and still usable for verification');
  clock.advance(30 * DAY);
  await keyRing.ensure();
  t.notOk(
    keyRing.jwks().keys.some((k) => k.kid === first),
    'dropped after its retention',
  );
  t.equal(keyRing.publicKey(first), undefined);
});

t.test('private keys are encrypted at rest and bound to their kid', async (t) => {
  const clock = manualClock();
  const { keyRing, dir, storage } = await ring(t, clock.now);
  const db = new Database(join(dir, DATABASE_FILE), { readonly: true });
  t.teardown(() => db.close());
  const rows = db.prepare('SELECT kid, sealed_private_jwk FROM signing_keys').all() as Array<{
    kid: string;
    sealed_private_jwk: Buffer;
  }>;
  for (const row of rows) {
    t.notMatch(row.sealed_private_jwk.toString('latin1'), /"d"\s*:|"kty"/, 'no plaintext JWK in the database');
  }
  const wrongMaster = new KeyRing(
    storage,
    deriveMasterKey('another-master-key-which-is-long-enough-xx'),
    rotationPolicy({ rotateEveryDays: 90, retainRetiredDays: 30 }),
    clock.now,
  );
  await t.rejects(wrongMaster.reload(), 'a different master key cannot open them');
  t.ok(keyRing.current());
});

t.test('another process rotating is picked up by reload', async (t) => {
  const clock = manualClock();
  const dir = tempDir(t);
  const a = await ring(t, clock.now, dir);
  const b = await ring(t, clock.now, dir);
  await b.keyRing.rotate();
  t.not(a.keyRing.current().kid, b.keyRing.current().kid);
  await a.keyRing.reload();
  t.equal(a.keyRing.current().kid, b.keyRing.current().kid);
});

t.test('without a master key a dev key file is generated with mode 0600 and reused', async (t) => {
  const dir = tempDir(t);
  const first = resolveMasterKey(undefined, dir);
  t.ok(first.devKeyFile);
  t.equal(first.created, true);
  t.equal(statSync(first.devKeyFile!).mode & 0o777, 0o600);
  const second = resolveMasterKey(undefined, dir);
  t.equal(second.created, false);
  t.same(second.key, first.key);
  const configured = resolveMasterKey('x'.repeat(40), dir);
  t.equal(configured.devKeyFile, undefined);
  t.notSame(configured.key, first.key);
});
