import t from 'tap';
import { createHash } from 'node:crypto';
import { canonicalJson } from '#lib/ledger/canonical-json.js';
import { RECEIPT_KEY_TAG, canonicalReceipt, hashReceipt, isReceiptHash, treeKeyOf } from '#lib/ledger/receipt.js';

t.test('canonical JSON follows RFC 8785', async (t) => {
  // RFC 8785 §3.2.3 sorting and §3.2.2.3 numbers.
  t.equal(
    canonicalJson({ b: 1, a: [true, null, 'x'], c: { z: 1e21, y: 0.000001, x: -0 } }),
    '{"a":[true,null,"x"],"b":1,"c":{"x":0,"y":0.000001,"z":1e+21}}',
  );
  t.equal(canonicalJson({ '\u20ac': 1, '\r': 2, '1': 3 }), '{"\\r":2,"1":3,"\u20ac":1}');
  t.equal(canonicalJson('\u2028é\u0007'), '"\u2028é\\u0007"');
  t.throws(() => canonicalJson(undefined));
});

t.test('a receipt hash is SHA-256 of its canonical JSON, and key order does not matter', async (t) => {
  const receipt = { kind: 'keys.rotated', at: '2026-11-22T12:00:00.000Z', outcome: 'success', kid: 'k1' };
  const expected = createHash('sha256')
    .update('{"at":"2026-11-22T12:00:00.000Z","kid":"k1","kind":"keys.rotated","outcome":"success"}')
    .digest('hex');
  t.equal(hashReceipt(receipt), expected);
  t.equal(
    hashReceipt({ outcome: 'success', kid: 'k1', at: '2026-11-22T12:00:00.000Z', kind: 'keys.rotated' }),
    expected,
  );
  t.ok(isReceiptHash(expected));
  t.notOk(isReceiptHash(expected.toUpperCase()));
  t.notOk(isReceiptHash(expected.slice(1)));
});

t.test('the tree key hashes the ASCII tag and the raw hash bytes', async (t) => {
  const hash = 'ab'.repeat(32);
  const expected = createHash('sha256')
    .update(Buffer.concat([Buffer.from('keyplane:receipt:v1', 'ascii'), Buffer.from(hash, 'hex')]))
    .digest();
  t.equal(RECEIPT_KEY_TAG, 'keyplane:receipt:v1');
  t.same(treeKeyOf(hash), expected);
  t.same(treeKeyOf(Buffer.from(hash, 'hex')), expected);
  t.throws(() => treeKeyOf('AB'.repeat(32)), TypeError);
  t.throws(() => treeKeyOf('ab'.repeat(31)), TypeError);
});

t.test('canonicalReceipt gives the canonical JSON the row stores and the hash of exactly that text', async (t) => {
  const receipt = { outcome: 'success', kind: 'keys.rotated', at: '2026-11-22T12:00:00.000Z', kid: 'k1' };
  const { body, hash } = canonicalReceipt(receipt);
  t.equal(body, canonicalJson(receipt));
  t.equal(hash, createHash('sha256').update(body).digest('hex'));
  t.equal(hash, hashReceipt(receipt));
});
