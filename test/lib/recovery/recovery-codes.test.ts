import t from 'tap';
import { randomBytes } from 'node:crypto';
import {
  generateRecoveryCodes,
  hashRecoveryCode,
  matchRecoveryCode,
  normalizeRecoveryCode,
  RECOVERY_ALPHABET,
} from '#lib/recovery/recovery-codes.js';

t.test('generates ten distinct 4x4 codes of 80 bits from an unambiguous alphabet', async (t) => {
  const codes = generateRecoveryCodes();
  t.equal(codes.length, 10);
  t.equal(new Set(codes).size, 10);
  for (const code of codes) {
    t.match(code, /^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/);
    t.notMatch(code, /[ILOU]/);
  }
  t.equal(RECOVERY_ALPHABET.length, 32, '5 bits per symbol, 16 symbols = 80 bits');
});

t.test('uses every symbol of the alphabet over many codes', async (t) => {
  const seen = new Set(generateRecoveryCodes(200).join('').replace(/-/g, ''));
  t.equal(seen.size, 32);
});

t.test('normalizes case, separators and look-alike letters', async (t) => {
  const [code] = generateRecoveryCodes(1);
  const plain = code!.replace(/-/g, '');
  t.equal(normalizeRecoveryCode(code!), plain);
  t.equal(normalizeRecoveryCode(code!.toLowerCase()), plain);
  t.equal(normalizeRecoveryCode(` ${code!.replace(/-/g, ' ')} `), plain);
  t.equal(normalizeRecoveryCode('ABCD-EFGH-JKMN-PQ0O'), 'ABCDEFGHJKMNPQ00');
  t.equal(normalizeRecoveryCode('il11-0000-0000-0000'), '1111000000000000');
  t.equal(normalizeRecoveryCode('ABCD-EFGH'), null, 'too short');
  t.equal(normalizeRecoveryCode('ABCD-EFGH-JKMN-PQRSX'), null, 'too long');
  t.equal(normalizeRecoveryCode('ABCD-EFGH-JKMN-PQR!'), null, 'foreign symbol');
  t.equal(normalizeRecoveryCode('ABCD-EFGH-JKMN-PQRU'), null, 'U is not in the alphabet');
});

t.test('hashes under a server key: deterministic per key, different across keys', async (t) => {
  const key = randomBytes(32);
  const other = randomBytes(32);
  t.match(hashRecoveryCode(key, 'ABCDEFGHJKMNPQRS'), /^[0-9a-f]{64}$/);
  t.equal(hashRecoveryCode(key, 'ABCDEFGHJKMNPQRS'), hashRecoveryCode(key, 'ABCDEFGHJKMNPQRS'));
  t.not(hashRecoveryCode(key, 'ABCDEFGHJKMNPQRS'), hashRecoveryCode(other, 'ABCDEFGHJKMNPQRS'));
  t.not(hashRecoveryCode(key, 'ABCDEFGHJKMNPQRS'), hashRecoveryCode(key, 'ABCDEFGHJKMNPQRT'));
});

t.test('matches a typed code against the stored hashes', async (t) => {
  const key = randomBytes(32);
  const codes = generateRecoveryCodes();
  const stored = codes.map((code, i) => ({
    id: `r${i}`,
    codeHash: hashRecoveryCode(key, normalizeRecoveryCode(code)!),
  }));
  t.equal(matchRecoveryCode(key, codes[3]!.toLowerCase().replace(/-/g, ' '), stored)?.id, 'r3');
  t.equal(matchRecoveryCode(key, 'ZZZZ-ZZZZ-ZZZZ-ZZZZ', stored), null);
  t.equal(matchRecoveryCode(key, 'not a code', stored), null);
  t.equal(matchRecoveryCode(randomBytes(32), codes[3]!, stored), null, 'another server key matches nothing');
  t.equal(matchRecoveryCode(key, codes[3]!, []), null);
});
