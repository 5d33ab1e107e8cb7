import t from 'tap';
import { checkRoleChange, checkSiteUrl, hasRole, slugify } from '#lib/orgs/roles.js';

t.test('role rules: admins manage, only owners touch the owner role, the last owner stays', async (t) => {
  t.ok(hasRole('owner', 'admin'));
  t.notOk(hasRole('member', 'admin'));
  t.equal(checkRoleChange('member', 'member', 'admin', 1), 'forbidden');
  t.equal(checkRoleChange('admin', 'member', 'admin', 1), null);
  t.equal(checkRoleChange('admin', 'member', null, 1), null);
  t.equal(checkRoleChange('admin', 'member', 'owner', 1), 'forbidden', 'an admin cannot grant owner');
  t.equal(checkRoleChange('admin', 'owner', 'member', 2), 'forbidden', 'an admin cannot demote an owner');
  t.equal(checkRoleChange('admin', 'owner', null, 2), 'forbidden', 'an admin cannot remove an owner');
  t.equal(checkRoleChange('owner', 'owner', 'admin', 1), 'last_owner');
  t.equal(checkRoleChange('owner', 'owner', null, 1), 'last_owner');
  t.equal(checkRoleChange('owner', 'owner', 'admin', 2), null);
  t.equal(checkRoleChange('owner', 'member', 'owner', 1), null);
});

t.test('slugs', async (t) => {
  t.equal(slugify('Acme Widgets, Inc.'), 'acme-widgets-inc');
  t.equal(slugify('Café Ünïcode'), 'cafe-unicode');
  t.equal(slugify('!'), 'org');
  t.equal(slugify('x'), 'org-x');
  t.equal(slugify('a'.repeat(60)).length, 40);
});

t.test('site URLs: https with a host name only', async (t) => {
  t.match(checkSiteUrl('https://Shop.Example/path?q=1'), {
    ok: true,
    url: 'https://shop.example/path?q=1',
    origin: 'https://shop.example',
    host: 'shop.example',
  });
  t.match(checkSiteUrl('https://localhost:8443/'), { ok: true, origin: 'https://localhost:8443' });
  t.same(checkSiteUrl('http://shop.example/'), { ok: false, refusal: 'not_https' });
  t.same(checkSiteUrl('https://u:p@shop.example/'), { ok: false, refusal: 'credentials' });
  t.same(checkSiteUrl('https://10.0.0.1/'), { ok: false, refusal: 'ip_literal' });
  t.same(checkSiteUrl('https://[::1]/'), { ok: false, refusal: 'ip_literal' });
  t.same(checkSiteUrl('https://shop.example/#x'), { ok: false, refusal: 'fragment' });
  t.same(checkSiteUrl('not a url'), { ok: false, refusal: 'malformed' });
  t.same(checkSiteUrl('https://intranet/'), { ok: false, refusal: 'malformed' });
  t.same(checkSiteUrl(42), { ok: false, refusal: 'malformed' });
});

t.test('domain proofs: the value, and a line of the well-known file', async (t) => {
  const { wellKnownFileProves, domainProofValue } = await import('#lib/orgs/roles.js');
  t.equal(domainProofValue('abc'), 'keyplane-site=abc');
  t.ok(wellKnownFileProves('# ours\r\nkeyplane-site=abc\n', 'abc'));
  t.notOk(wellKnownFileProves('keyplane-site=abcdef', 'abc'));
});
