import t from 'tap';
import { randomBytes } from 'node:crypto';
// @ts-expect-error the macaroon package ships no types
import * as reference from 'macaroon';
import { mintMacaroon, verifyMacaroon } from '#lib/v1/macaroon.js';

/** Interoperates with js-macaroon (libmacaroons-compatible) both ways; refuses every tampering. */
const rootKey = randomBytes(32);
const caveats = ['client_id = cli_1', 'exp = 1900000000', 'identity = usr_1'];

function decode(token: string): Record<string, any> {
  return JSON.parse(Buffer.from(token, 'base64url').toString());
}
function encode(json: unknown): string {
  return Buffer.from(JSON.stringify(json)).toString('base64url');
}

t.test('our macaroons verify with the reference library, and its macaroons verify with ours', async (t) => {
  const ours = mintMacaroon(rootKey, { location: 'https://id.example.com', identifier: 'v1s_abc', caveats });
  const imported = reference.importMacaroon(decode(ours));
  const seen: string[] = [];
  t.doesNotThrow(() =>
    imported.verify(rootKey, (cid: string) => {
      seen.push(cid);
      return null;
    }),
  );
  t.same(seen, caveats);

  const theirs = reference.newMacaroon({
    identifier: 'v1s_def',
    location: 'https://id.example.com',
    rootKey,
    version: 2,
  });
  for (const caveat of caveats) theirs.addFirstPartyCaveat(caveat);
  t.same(verifyMacaroon(rootKey, encode(theirs.exportJSON())), {
    location: 'https://id.example.com',
    identifier: 'v1s_def',
    caveats,
  });
});

t.test('refuses another root key, a changed or dropped caveat, a third-party caveat and garbage', async (t) => {
  const token = mintMacaroon(rootKey, { identifier: 'v1s_abc', caveats });
  t.same(verifyMacaroon(rootKey, token)?.caveats, caveats);
  t.equal(verifyMacaroon(randomBytes(32), token), null, 'another key');
  const json = decode(token);
  t.equal(
    verifyMacaroon(rootKey, encode({ ...json, c: [{ i: 'client_id = cli_2' }, ...json.c.slice(1)] })),
    null,
    'changed caveat',
  );
  t.equal(verifyMacaroon(rootKey, encode({ ...json, c: json.c.slice(0, 2) })), null, 'dropped caveat');
  t.equal(verifyMacaroon(rootKey, encode({ ...json, i: 'v1s_other' })), null, 'other identifier');
  t.equal(
    verifyMacaroon(rootKey, encode({ ...json, c: [...json.c, { i: 'x', v64: 'AA', l: 'https://third.example' }] })),
    null,
    'third-party caveat',
  );
  t.equal(verifyMacaroon(rootKey, encode({ ...json, v: 1 })), null, 'other version');
  for (const garbage of [
    '',
    'not base64!',
    encode('str'),
    encode(null),
    encode({ v: 2, i: 'x', c: 'no', s64: 'AA' }),
    encode({ v: 2, i: 'x', c: [null], s64: 'AA' }),
    'A'.repeat(5000),
    Buffer.from('{').toString('base64url'),
  ]) {
    t.equal(verifyMacaroon(rootKey, garbage), null, JSON.stringify(garbage).slice(0, 30));
  }
  // A caveat appended by a holder is legitimate macaroon attenuation: the chain extends.
  const attenuated = reference.importMacaroon(json);
  attenuated.addFirstPartyCaveat('ip = 10.0.0.1');
  t.same(verifyMacaroon(rootKey, encode(attenuated.exportJSON()))?.caveats, [...caveats, 'ip = 10.0.0.1']);
});
