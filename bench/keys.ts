/**
 * bench:keys — ES256 signatures and verifications per second through the key ring (jose, as
 * tokens are made and checked) next to raw node:crypto on the same key in the same run. The
 * raw figures are the bound the token and gateway benchmarks are judged against.
 */
import { KeyObject, createPublicKey, sign, verify } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, createLocalJWKSet, jwtVerify } from 'jose';
import { deriveMasterKey } from '#lib/crypto/sealed-box.js';
import { KeyRing, rotationPolicy } from '../control-plane/src/keys/key-ring.js';
import { openSqliteStorage } from '../control-plane/src/storage/sqlite/index.js';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 3);

async function measure(name: string, op: () => unknown | Promise<unknown>): Promise<number> {
  for (let i = 0; i < 200; i++) await op(); // warm-up
  let count = 0;
  const start = process.hrtime.bigint();
  const end = start + BigInt(SECONDS * 1e9);
  while (process.hrtime.bigint() < end) {
    for (let i = 0; i < 50; i++) await op();
    count += 50;
  }
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  const rate = count / elapsed;
  process.stderr.write(`  ${name}: ${Math.round(rate)} ops/s\n`);
  return rate;
}

const dir = mkdtempSync(join(tmpdir(), 'keyplane-bench-'));
const storage = openSqliteStorage(dir);
try {
  const ring = new KeyRing(
    storage,
    deriveMasterKey('bench-master-key-0123456789abcdef0123'),
    rotationPolicy({ rotateEveryDays: 90, retainRetiredDays: 30 }),
  );
  await ring.ensure();
  const { kid, privateKey } = ring.current();
  const rawPrivate = KeyObject.from(privateKey);
  const publicKey = createPublicKey(rawPrivate);
  const claims = {
    iss: 'http://localhost:4400',
    sub: 'usr_benchmark',
    aud: 'client',
    scope: 'openid email',
    svc: { assurance: 'passkey', principal: { type: 'human', id: 'usr_benchmark' } },
  };
  const now = Math.floor(Date.now() / 1000);
  const makeToken = () =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(privateKey);
  const token = await makeToken();
  const signingInput = Buffer.from(token.split('.').slice(0, 2).join('.'));
  const signature = Buffer.from(token.split('.')[2]!, 'base64url');
  const jwks = createLocalJWKSet(ring.jwks());

  process.stderr.write(
    `bench:keys — ${SECONDS}s per case, Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}\n`,
  );
  const rawSign = await measure('raw node:crypto ES256 sign', () =>
    sign('sha256', signingInput, { key: rawPrivate, dsaEncoding: 'ieee-p1363' }),
  );
  const ringSign = await measure('key ring + jose SignJWT', makeToken);
  const rawVerify = await measure('raw node:crypto ES256 verify', () =>
    verify('sha256', signingInput, { key: publicKey, dsaEncoding: 'ieee-p1363' }, signature),
  );
  const ringVerify = await measure('JWKS + jose jwtVerify', () => jwtVerify(token, jwks));

  const rows = [
    ['sign', rawSign, ringSign],
    ['verify', rawVerify, ringVerify],
  ] as const;
  process.stdout.write(
    '\n| operation | raw node:crypto (ops/s) | key ring via jose (ops/s) | ratio |\n|---|---|---|---|\n',
  );
  for (const [op, raw, ring] of rows) {
    process.stdout.write(`| ${op} | ${Math.round(raw)} | ${Math.round(ring)} | ${(ring / raw).toFixed(2)} |\n`);
  }
} finally {
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
}
