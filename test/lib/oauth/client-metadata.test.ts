import t from 'tap';
import { clientTypeOf, usesClientSecret, validateClientMetadata } from '#lib/oauth/client-metadata.js';
import { reasonOf } from '../../helpers/reason-of.js';

const refusalOf = (body: unknown) => reasonOf(() => validateClientMetadata(body));

t.test('applies the documented defaults', async (t) => {
  t.same(validateClientMetadata({ redirect_uris: ['https://a.example.com/cb'], unknown_field: 'ignored' }), {
    redirect_uris: ['https://a.example.com/cb'],
    post_logout_redirect_uris: [],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    scope: 'openid email profile',
    resources: [],
    access: { humans: true, agents: false },
    token_endpoint_auth_method: 'client_secret_basic',
    dpop_bound_access_tokens: false,
    in_place: false,
  });
});

t.test('keeps optional descriptive fields and dedupes lists', async (t) => {
  const metadata = validateClientMetadata({
    redirect_uris: ['https://a.example.com/cb', 'https://a.example.com/cb'],
    client_name: 'A',
    client_uri: 'https://a.example.com',
    logo_uri: 'https://a.example.com/logo.png',
    scope: 'openid openid email',
    dpop_bound_access_tokens: true,
  });
  t.same(metadata.redirect_uris, ['https://a.example.com/cb']);
  t.equal(metadata.scope, 'openid email');
  t.match(metadata, {
    client_name: 'A',
    client_uri: 'https://a.example.com',
    logo_uri: 'https://a.example.com/logo.png',
    dpop_bound_access_tokens: true,
  });
});

t.test('refuses malformed descriptive fields', async (t) => {
  const base = { redirect_uris: ['https://a.example.com/cb'] };
  t.equal(refusalOf({ ...base, client_name: '' }), 'invalid_client_metadata');
  t.equal(refusalOf({ ...base, client_uri: 'http://a.example.com' }), 'invalid_client_metadata');
  t.equal(refusalOf({ ...base, logo_uri: 'not a url' }), 'invalid_client_metadata');
  t.equal(refusalOf({ ...base, dpop_bound_access_tokens: 'yes' }), 'invalid_client_metadata');
  t.equal(refusalOf({ ...base, scope: '' }), 'invalid_client_metadata');
  t.equal(
    refusalOf({ ...base, redirect_uris: ['https://a.example.com/cb'], grant_types: 'authorization_code' }),
    'invalid_client_metadata',
  );
  t.equal(refusalOf([]), 'invalid_client_metadata');
  t.equal(
    refusalOf({ redirect_uris: Array.from({ length: 21 }, (_v, i) => `https://a.example.com/${i}`) }),
    'invalid_redirect_uri',
  );
  t.equal(
    refusalOf({ ...base, gateway: { mode: 'enforce', routes: [{ path: '/', scopes: ['a b'] }] } }),
    'invalid_client_metadata',
  );
  t.equal(
    refusalOf({ ...base, gateway: { mode: 'enforce', routes: [{ path: '/', allow: { groups: ['x'] } }] } }),
    'invalid_client_metadata',
    'allow names only users, orgs, email_domains and agent_owners_in',
  );
  t.equal(
    refusalOf({
      ...base,
      gateway: { mode: 'enforce', routes: [{ path: '/', public: true, allow: { users: ['a'] } }] },
    }),
    'invalid_client_metadata',
    'a public route has no allow rules',
  );
  t.equal(
    refusalOf({
      ...base,
      gateway: {
        mode: 'enforce',
        routes: [{ path: '/', allow: { users: Array.from({ length: 501 }, (_v, i) => `u${i}`) } }],
      },
    }),
    'invalid_client_metadata',
  );
  t.equal(
    refusalOf({ ...base, token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'http://keys.example.com' }),
    'invalid_client_metadata',
  );
});

t.test('accepts private_key_jwt with a jwks_uri', async (t) => {
  const metadata = validateClientMetadata({
    redirect_uris: ['https://a.example.com/cb'],
    token_endpoint_auth_method: 'private_key_jwt',
    jwks_uri: 'https://a.example.com/jwks',
  });
  t.equal(metadata.jwks_uri, 'https://a.example.com/jwks');
});

t.test('derives the client type and secret use from the auth method', async (t) => {
  t.equal(clientTypeOf('none'), 'public');
  t.equal(clientTypeOf('private_key_jwt'), 'confidential');
  t.ok(usesClientSecret('client_secret_post'));
  t.notOk(usesClientSecret('private_key_jwt'));
  t.notOk(usesClientSecret('none'));
});

t.test('first_party: true is kept, false or absent leaves it out, anything else is refused', async (t) => {
  const base = { redirect_uris: ['https://a.example.com/cb'] };
  t.equal(validateClientMetadata({ ...base, first_party: true }).first_party, true);
  t.notOk('first_party' in validateClientMetadata({ ...base, first_party: false }));
  t.notOk('first_party' in validateClientMetadata(base));
  t.equal(refusalOf({ ...base, first_party: 'true' }), 'invalid_client_metadata');
});

t.test('the jwt-bearer grant type is accepted together with access.agents, which it means', async (t) => {
  const base = { redirect_uris: ['https://a.example.com/cb'] };
  const jwtBearer = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
  const agents = validateClientMetadata({
    ...base,
    grant_types: ['authorization_code', jwtBearer],
    access: { humans: true, agents: true },
  });
  t.same(agents.grant_types, ['authorization_code', jwtBearer]);
  t.same(agents.access, { humans: true, agents: true });
  t.equal(
    refusalOf({ ...base, grant_types: ['authorization_code', jwtBearer] }),
    'invalid_client_metadata',
    'without access.agents it would promise a grant the token endpoint refuses',
  );
  t.equal(
    refusalOf({ ...base, grant_types: ['authorization_code', jwtBearer], access: { humans: true, agents: false } }),
    'invalid_client_metadata',
  );
});

t.test('application_type native admits private-use scheme redirect URIs; web does not', async (t) => {
  const native = validateClientMetadata({
    application_type: 'native',
    token_endpoint_auth_method: 'none',
    redirect_uris: ['com.example.app:/callback', 'http://127.0.0.1/callback'],
  });
  t.same(native.redirect_uris, ['com.example.app:/callback', 'http://127.0.0.1/callback']);
  t.equal(
    refusalOf({ application_type: 'web', token_endpoint_auth_method: 'none', redirect_uris: ['com.example.app:/cb'] }),
    'invalid_redirect_uri',
  );
  t.equal(
    refusalOf({ token_endpoint_auth_method: 'none', redirect_uris: ['com.example.app:/cb'] }),
    'invalid_redirect_uri',
    'web is the default',
  );
});
