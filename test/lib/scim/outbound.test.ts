import t from 'tap';
import { firstListedId, pushSubjectsOf, readScimTarget } from '#lib/scim/outbound.js';
import { reasonOf } from '../../helpers/reason-of.js';

t.test('a receipt names whom to push again, never from its own pushes', async (t) => {
  t.same(pushSubjectsOf({ kind: 'team.member_added', orgId: 'org_1', teamId: 'team_1', identityId: 'usr_1' }), {
    users: ['usr_1'],
    groups: ['team_1'],
    orgId: 'org_1',
  });
  t.same(pushSubjectsOf({ kind: 'consent.revoked', party: 'cl_1', identityId: 'usr_1' }), {
    users: ['usr_1'],
    groups: [],
    clientId: 'cl_1',
  });
  t.same(
    pushSubjectsOf({ kind: 'authorization.code_issued', clientId: 'cl_1', identityId: 'usr_1', approval: 'new' }),
    { users: ['usr_1'], groups: [], clientId: 'cl_1' },
    'an OIDC approval given now opens the consent gate for that client',
  );
  t.equal(
    pushSubjectsOf({
      kind: 'authorization.code_issued',
      clientId: 'cl_1',
      identityId: 'usr_1',
      approval: 'remembered',
    }),
    null,
    'a sign-in under an approval given before changes nothing pushed',
  );
  t.same(pushSubjectsOf({ kind: 'client.updated', clientId: 'cl_1' }), { users: [], groups: [], reconcile: 'cl_1' });
  t.same(pushSubjectsOf({ kind: 'client.deleted', clientId: 'cl_1' }), { users: [], groups: [], removed: 'cl_1' });
  t.equal(pushSubjectsOf({ kind: 'scim.outbound.user_provisioned', clientId: 'cl_1', identityId: 'usr_1' }), null);
  t.equal(pushSubjectsOf({ kind: 'session.started', identityId: 'usr_1' }), null, 'a sign-in changes nothing pushed');
});

t.test('the scim member: kept when absent, removed with null, refused when malformed', async (t) => {
  t.equal(readScimTarget(undefined), undefined);
  t.equal(readScimTarget(null), null);
  t.same(readScimTarget({ base_url: 'https://app.example/scim/v2/', token: 't0k' }), {
    baseUrl: 'https://app.example/scim/v2',
    token: 't0k',
  });
  t.same(readScimTarget({ base_url: 'http://127.0.0.1:8080/scim', token: 'x' }), {
    baseUrl: 'http://127.0.0.1:8080/scim',
    token: 'x',
  });
  for (const bad of [
    [],
    { base_url: 'https://u:p@app.example/scim', token: 'x' },
    { base_url: 'https://app.example/scim#f', token: 'x' },
    { base_url: 'not a url', token: 'x' },
    { base_url: 'https://app.example/scim', token: '' },
    { base_url: 'https://app.example/scim' },
  ])
    t.equal(
      reasonOf(() => readScimTarget(bad)),
      'invalid_client_metadata',
      JSON.stringify(bad),
    );
});

t.test('a list response names its first resource', async (t) => {
  t.equal(
    firstListedId({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], Resources: [{ id: 'a' }] }),
    'a',
  );
  t.equal(firstListedId({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], Resources: [] }), null);
  t.equal(firstListedId({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'] }), null);
});
