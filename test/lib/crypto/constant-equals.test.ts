import t from 'tap';
import { constantEquals, equalDigests } from '#lib/crypto/constant-equals.js';

t.test('constantEquals compares secrets of any length', async (t) => {
  t.ok(constantEquals('s3cret', 's3cret'));
  t.notOk(constantEquals('s3cret', 's3cret!'));
  t.ok(constantEquals(new Uint8Array([1, 2]), new Uint8Array([1, 2])));
});

t.test('equalDigests compares public digests, whatever their byte lengths', async (t) => {
  const digest = 'n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg';
  t.ok(equalDigests(digest, digest));
  t.notOk(equalDigests(digest, `${digest.slice(0, -1)}h`));
  t.notOk(equalDigests(digest, digest.slice(1)), 'a shorter one');
  t.notOk(equalDigests('é', 'ab'), 'same byte length, other content');
  t.notOk(equalDigests('é', 'a'), 'one character each, other byte lengths');
});
