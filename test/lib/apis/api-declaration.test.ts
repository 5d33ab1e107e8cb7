import t from 'tap';
import {
  apiAdmits,
  describeScope,
  keepDeclared,
  resourceUnderDomain,
  scopesForAudience,
  validateApiDeclaration,
} from '#lib/apis/api-declaration.js';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';

const reasonOf = (fn: () => unknown) => {
  try {
    fn();
    return 'accepted';
  } catch (error) {
    return isKeyplaneError(error) ? error.reason : 'thrown';
  }
};
const base = {
  resource: 'https://notes.example.com',
  name: 'Notes',
  scopes: [{ name: 'notes.read', description: 'Read' }],
};

t.test('an API declaration is checked: resource, scope names, reserved names, languages', async (t) => {
  t.match(validateApiDeclaration(base), { resource: base.resource, allowedClients: [], allowedOrgs: [] });
  for (const name of ['openid', 'email', 'profile', 'orgs', 'groups', 'offline_access', 'ssf.manage', 'ssf.read'])
    t.equal(
      reasonOf(() => validateApiDeclaration({ ...base, scopes: [{ name, description: 'x' }] })),
      'invalid_scope',
      name,
    );
  t.equal(
    reasonOf(() => validateApiDeclaration({ ...base, resource: 'http://notes.example.com' })),
    'invalid_request',
  );
  t.equal(
    reasonOf(() => validateApiDeclaration({ ...base, scopes: [] })),
    'invalid_request',
  );
  t.equal(
    reasonOf(() => validateApiDeclaration({ ...base, scopes: [{ name: 'a b', description: 'x' }] })),
    'invalid_request',
  );
  t.equal(
    reasonOf(() => validateApiDeclaration({ ...base, scopes: [...base.scopes, ...base.scopes] })),
    'invalid_request',
    'a name twice',
  );
  t.equal(
    reasonOf(() => validateApiDeclaration({ ...base, scopes: [{ name: 'x' }] })),
    'invalid_request',
    'no description',
  );
  t.equal(
    reasonOf(() => validateApiDeclaration({ ...base, scopes: [{ name: 'x', description: { 'not a tag': 'x' } }] })),
    'invalid_request',
  );
  t.equal(
    reasonOf(() => validateApiDeclaration({ ...base, allowed_orgs: ['Not A Slug'] })),
    'invalid_request',
  );
});

t.test("an API admits its owner's clients, the clients it lists and its listed orgs' clients", async (t) => {
  const api = { apiOwnerOrgId: 'org_a', allowedClients: ['cl_listed'], allowedOrgIds: ['org_b'] };
  t.equal(apiAdmits({ ...api, clientId: 'cl_1', clientOwnerId: 'org_a' }), true, "the owner org's client");
  t.equal(apiAdmits({ ...api, clientId: 'cl_listed', clientOwnerId: 'usr_x' }), true, 'a listed client');
  t.equal(apiAdmits({ ...api, clientId: 'cl_2', clientOwnerId: 'org_b' }), true, "a listed org's client");
  t.equal(apiAdmits({ ...api, clientId: 'cl_3', clientOwnerId: 'usr_x' }), false, "a person's own client");
  t.equal(apiAdmits({ ...api, clientId: 'cl_4', clientOwnerId: null }), false, "the operator's client for an org API");
  t.equal(
    apiAdmits({ apiOwnerOrgId: null, allowedClients: [], allowedOrgIds: [], clientId: 'cl_5', clientOwnerId: null }),
    true,
    "the operator's client for an operator API",
  );
});

t.test('a description in the person language, falling back to English then the first', async (t) => {
  const words = { en: 'Read your notes', de: 'Deine Notizen lesen', 'pt-BR': 'Ler suas notas' };
  t.equal(describeScope(words, 'de'), 'Deine Notizen lesen');
  t.equal(describeScope(words, 'pt-BR'), 'Ler suas notas');
  t.equal(describeScope(words, 'ja'), 'Read your notes');
  t.equal(describeScope({ fr: 'Lire' }, 'ja'), 'Lire');
  t.equal(describeScope({ 'de-AT': 'Lesen' }, 'de'), 'Lesen');
  t.equal(describeScope('Plain', 'ar'), 'Plain');
});

t.test('a token for a resource carries the provider scopes and those declared for it', async (t) => {
  t.same(scopesForAudience(['openid', 'offline_access', 'a', 'b'], ['b']), ['openid', 'b']);
  t.same(keepDeclared(['openid', 'offline_access', 'a', 'b'], ['b']), ['openid', 'offline_access', 'b']);
  t.equal(resourceUnderDomain('https://api.acme.example/v1', 'acme.example'), true);
  t.equal(resourceUnderDomain('https://acme.example', 'acme.example'), true);
  t.equal(resourceUnderDomain('https://notacme.example', 'acme.example'), false);
});
