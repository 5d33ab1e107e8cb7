import t from 'tap';
import { GROUP_SHAPE, USER_SHAPE, ENTERPRISE_USER } from '#lib/scim/attribute-path.js';
import { applyPatch, readPatchRequest, PATCH_OP } from '#lib/scim/patch.js';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';

const patch = (resource: Record<string, unknown>, Operations: unknown[], shape = USER_SHAPE) =>
  applyPatch(resource, readPatchRequest({ schemas: [PATCH_OP], Operations }), shape);

const reasonOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return isKeyplaneError(error) ? error.reason : 'other';
  }
  return null;
};

t.test('op names in any case, and a path-less replace or add of an attribute object', async (t) => {
  const user = { userName: 'a', name: { givenName: 'A' } };
  t.same(patch(user, [{ op: 'Replace', value: { active: 'False', displayName: 'A B' } }]), {
    ...user,
    active: 'False',
    displayName: 'A B',
  });
  t.same(patch(user, [{ op: 'ADD', value: { 'name.familyName': 'B' } }]).name, { givenName: 'A', familyName: 'B' });
  t.same(patch(user, [{ op: 'add', value: { [ENTERPRISE_USER]: { department: 'R&D' } } }])[ENTERPRISE_USER], {
    department: 'R&D',
  });
  t.same(user, { userName: 'a', name: { givenName: 'A' } }, 'the stored resource is not changed');
});

t.test('value-filtered paths: replace the matching element, add it when none matches, remove it', async (t) => {
  const user = {
    userName: 'a',
    emails: [
      { type: 'work', value: 'a@w.example' },
      { type: 'home', value: 'a@h.example' },
    ],
  };
  t.same(patch(user, [{ op: 'replace', path: 'emails[type eq "work"].value', value: 'new@w.example' }]).emails, [
    { type: 'work', value: 'new@w.example' },
    { type: 'home', value: 'a@h.example' },
  ]);
  t.same(
    patch({ userName: 'a' }, [{ op: 'replace', path: 'emails[type eq "work"].value', value: 'x@w.example' }]).emails,
    [{ type: 'work', value: 'x@w.example' }],
  );
  t.same(patch(user, [{ op: 'remove', path: 'emails[type eq "home"]' }]).emails, [
    { type: 'work', value: 'a@w.example' },
  ]);
  t.equal(
    reasonOf(() => patch(user, [{ op: 'replace', path: 'emails[value sw "a"]', value: {} }])),
    null,
  );
  t.equal(
    reasonOf(() => patch(user, [{ op: 'replace', path: 'emails[value sw "zzz"]', value: { type: 'x' } }])),
    'scim_no_target',
  );
});

t.test('members: added once, removed by value list or by filter', async (t) => {
  const group = { displayName: 'G', members: [{ value: '1' }, { value: '2' }] };
  const added = patch(group, [{ op: 'add', path: 'members', value: [{ value: '2' }, { value: '3' }] }], GROUP_SHAPE);
  t.same(added.members, [{ value: '1' }, { value: '2' }, { value: '3' }]);
  const removed = patch(
    added,
    [
      { op: 'Remove', path: 'members', value: [{ value: '1' }] },
      { op: 'remove', path: 'members[value eq "3"]' },
    ],
    GROUP_SHAPE,
  );
  t.same(removed.members, [{ value: '2' }]);
});

t.test('refusals: not a PatchOp, unknown op, unknown path, read-only attribute, remove without path', async (t) => {
  t.equal(
    reasonOf(() => readPatchRequest({ Operations: [{ op: 'add' }] })),
    'scim_invalid_syntax',
  );
  t.equal(
    reasonOf(() => readPatchRequest({ schemas: [PATCH_OP], Operations: [{ op: 'copy' }] })),
    'scim_invalid_syntax',
  );
  t.equal(
    reasonOf(() => patch({}, [{ op: 'add', path: 'shoeSize', value: 1 }])),
    'scim_invalid_path',
  );
  t.equal(
    reasonOf(() => patch({}, [{ op: 'add', path: 'emails[type eq', value: 1 }])),
    'scim_invalid_path',
  );
  t.equal(
    reasonOf(() => patch({}, [{ op: 'replace', path: 'meta', value: {} }])),
    'scim_mutability',
  );
  t.equal(
    reasonOf(() => patch({}, [{ op: 'remove' }])),
    'scim_no_target',
  );
});
