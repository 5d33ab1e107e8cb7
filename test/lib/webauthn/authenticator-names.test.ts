import t from 'tap';
import {
  authenticatorNameOf,
  authenticatorNames,
  compactAuthenticatorList,
  defaultPasskeyLabel,
  ICON_MAX_CHARS,
} from '#lib/webauthn/authenticator-names.js';

const SMALL_ICON = `data:image/svg+xml;base64,${Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>').toString('base64')}`;

t.test('the committed list names well-known authenticators', async (t) => {
  t.equal(authenticatorNameOf('ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4')?.name, 'Google Password Manager');
  t.equal(authenticatorNameOf('EA9B8D66-4D01-1D21-3CE4-B6B48CB575D4')?.name, 'Google Password Manager', 'any case');
  t.equal(authenticatorNameOf('00000000-0000-0000-0000-000000000000'), null, 'the all-zero AAGUID names none');
  t.equal(authenticatorNameOf(null), null);
  t.equal(authenticatorNameOf(undefined), null);
});

t.test('compacting the community list keeps names and small SVG icons only', async (t) => {
  const list = compactAuthenticatorList(
    {
      'AAAAAAAA-0000-0000-0000-000000000001': { name: ' Small ', icon_light: SMALL_ICON, icon_dark: SMALL_ICON },
      'aaaaaaaa-0000-0000-0000-000000000002': { name: 'Big', icon_light: SMALL_ICON + 'A'.repeat(ICON_MAX_CHARS) },
      'aaaaaaaa-0000-0000-0000-000000000003': { name: 'Png', icon_light: 'data:image/png;base64,AAAA' },
      'aaaaaaaa-0000-0000-0000-000000000004': { icon_light: SMALL_ICON },
      'not-a-uuid': { name: 'Nope' },
      'aaaaaaaa-0000-0000-0000-000000000005': 'not an object',
    },
    'test',
  );
  t.same(list, {
    source: 'test',
    authenticators: {
      'aaaaaaaa-0000-0000-0000-000000000001': { name: 'Small', icon: SMALL_ICON },
      'aaaaaaaa-0000-0000-0000-000000000002': { name: 'Big' },
      'aaaaaaaa-0000-0000-0000-000000000003': { name: 'Png' },
    },
  });
  t.same(compactAuthenticatorList({}, 'retired').authenticators, {}, 'a retired (empty) list is empty');
  t.same(compactAuthenticatorList(null, 'x').authenticators, {});
});

t.test('configured entries win over the committed list', async (t) => {
  const lookup = authenticatorNames(
    { 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4': { name: 'Our managed devices' } },
    { source: 'test', authenticators: { 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4': { name: 'GPM' } } },
  );
  t.equal(lookup('ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4')?.name, 'Our managed devices');
});

t.test("a new passkey is labelled after its authenticator, else 'Passkey <n>'", async (t) => {
  t.equal(defaultPasskeyLabel('ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4', 2), 'Google Password Manager');
  t.equal(defaultPasskeyLabel('00000000-0000-0000-0000-000000000000', 2), 'Passkey 2');
  t.equal(defaultPasskeyLabel(null, 1), 'Passkey 1');
});
