import t from 'tap';
import { OWNER_CODE_ALPHABET, generateOwnerCode, normalizeOwnerCode } from '#lib/agents/owner-code.js';

t.test('codes are XXXX-XXXX from the unambiguous alphabet', async (t) => {
  for (let i = 0; i < 50; i++) {
    const code = generateOwnerCode();
    t.match(code, /^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    for (const ch of code.replace('-', '')) t.ok(OWNER_CODE_ALPHABET.includes(ch));
  }
  for (const ambiguous of ['0', 'O', '1', 'I', 'L']) t.notOk(OWNER_CODE_ALPHABET.includes(ambiguous), ambiguous);
});

t.test('typed codes are normalized; impossible ones are null', async (t) => {
  t.equal(normalizeOwnerCode('abcd 2345'), 'ABCD-2345');
  t.equal(normalizeOwnerCode('ABCD-2345'), 'ABCD-2345');
  t.equal(normalizeOwnerCode('ABCD-234'), null);
  t.equal(normalizeOwnerCode('ABCD-2340'), null, 'zero is not in the alphabet');
});
