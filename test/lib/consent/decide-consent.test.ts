import t from 'tap';
import { decideConsent } from '#lib/consent/decide-consent.js';

t.test('the one consent rule: first-party, or an approval covering every scope and the resource', async (t) => {
  const release = { scopes: ['sub', 'username'] };
  t.same(decideConsent({ firstParty: true, approval: null, release }), { approved: true, by: 'first_party' });
  t.same(decideConsent({ firstParty: false, approval: null, release }), { approved: false });
  t.same(
    decideConsent({ firstParty: false, approval: { scopes: ['sub', 'username', 'email'], resources: [] }, release }),
    { approved: true, by: 'remembered' },
  );
  t.same(
    decideConsent({ firstParty: false, approval: { scopes: ['sub'], resources: [] }, release }),
    { approved: false },
    'an attribute never approved asks again',
  );
  t.same(
    decideConsent({
      firstParty: false,
      approval: { scopes: ['openid'], resources: [] },
      release: { scopes: ['openid'], resource: 'https://api.example/' },
    }),
    { approved: false },
    'a resource never named asks again',
  );
});
