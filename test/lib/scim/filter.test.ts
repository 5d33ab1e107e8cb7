import t from 'tap';
import { GROUP_SHAPE, USER_SHAPE } from '#lib/scim/attribute-path.js';
import { equalityOn, matchesFilter, parseScimFilter } from '#lib/scim/filter.js';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';

const ann = {
  id: 'usr_1',
  userName: 'Ann@Acme.example',
  externalId: 'Ext-1',
  active: true,
  emails: [
    { type: 'work', value: 'ann@acme.example' },
    { type: 'home', value: 'ann@home.example' },
  ],
  meta: { lastModified: '2026-11-22T12:00:00.000Z' },
};
const matches = (filter: string, resource: Record<string, unknown> = ann) =>
  matchesFilter(resource, parseScimFilter(filter, USER_SHAPE), USER_SHAPE);

t.test('comparisons follow RFC 7643: case-insensitive names and strings, case-exact ids, instants', async (t) => {
  t.ok(matches('USERNAME eq "ann@acme.EXAMPLE"'));
  t.notOk(matches('externalId eq "ext-1"'));
  t.ok(matches('externalId eq "Ext-1"'));
  t.ok(matches('active eq true'));
  t.ok(matches('meta.lastModified gt "2026-11-22T11:59:59+00:00"'));
  t.notOk(matches('meta.lastModified gt "2026-11-22T13:00:00+01:00"'), 'the same instant is not later');
  t.ok(matches('emails[type eq "home"].value ew "home.example"'));
  t.notOk(matches('emails[type eq "work"].value ew "home.example"'));
  t.ok(matches('emails co "home"'), 'a multi-valued attribute compares its values');
  t.ok(matches('title pr') === false);
});

t.test('precedence: not, then and, then or; parentheses first', async (t) => {
  t.ok(matches('userName eq "x" or userName sw "ann" and active eq true'));
  t.notOk(matches('(userName eq "x" or userName sw "ann") and active eq false'));
  t.ok(matches('not (active eq false) and not (userName eq "x")'));
});

t.test('refused: what does not parse, unknown attributes, ordering on booleans', async (t) => {
  for (const filter of ['userName eq', 'userName xx "a"', 'shoeSize eq 1', 'active lt true']) {
    try {
      parseScimFilter(filter, USER_SHAPE);
      t.fail(filter);
    } catch (error) {
      t.equal(isKeyplaneError(error) && error.reason, 'scim_invalid_filter', filter);
    }
  }
  t.ok(parseScimFilter('members[value eq "1"]', GROUP_SHAPE));
});

t.test('equalityOn finds the index look-up only when it is the whole filter', async (t) => {
  t.equal(equalityOn(parseScimFilter('userName eq "a"', USER_SHAPE), 'userName'), 'a');
  t.equal(equalityOn(parseScimFilter('username EQ "a"', USER_SHAPE), 'userName'), 'a');
  t.equal(equalityOn(parseScimFilter('userName eq "a" and active eq true', USER_SHAPE), 'userName'), null);
  t.equal(equalityOn(parseScimFilter('userName co "a"', USER_SHAPE), 'userName'), null);
});
