import t from 'tap';
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';
import { REFUSED_MEMBERS } from '#lib/oauth/oidc-client-metadata.js';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';

const base = { redirect_uris: ['https://a.example.com/cb'] };
const keys = { jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'a', y: 'b' }] } };

/** The refusal's reason and message, or undefined when the metadata was accepted. */
function refusal(body: Record<string, unknown>): { reason: string; message: string } | undefined {
  try {
    validateClientMetadata({ ...base, ...body });
  } catch (error) {
    if (!isKeyplaneError(error)) throw error;
    return { reason: error.reason, message: error.message };
  }
  return undefined;
}

t.test(
  'without scope, a client registers every offered scope, offline_access only with the refresh grant',
  async (t) => {
    t.equal(validateClientMetadata(base).scope, 'openid email profile');
    t.equal(
      validateClientMetadata({ ...base, grant_types: ['authorization_code', 'refresh_token'] }).scope,
      'openid email profile offline_access',
    );
    t.equal(validateClientMetadata({ ...base, scope: 'openid' }).scope, 'openid', 'a registered scope narrows it');
    t.equal(
      validateClientMetadata(base, { defaultScopes: ['email'] }).scope,
      'openid email',
      "the operator's narrower default, with openid always",
    );
  },
);

t.test('every standard member that is not offered is refused, naming the member', async (t) => {
  for (const member of Object.keys(REFUSED_MEMBERS)) {
    const refused = refusal({ [member]: member.endsWith('_required') || member.includes('bound') ? true : 'x' });
    t.equal(refused?.reason, 'invalid_client_metadata', member);
    t.ok(refused?.message.startsWith(member), `${member}: the message names it`);
  }
  t.equal(refusal({ tls_client_auth_san_dns: false }), undefined, 'false asks for nothing');
  t.equal(refusal({ tls_client_certificate_bound_access_tokens: false }), undefined);
});

t.test('signing and subject choices are honoured when offered, refused otherwise', async (t) => {
  const refusedValues: Array<[string, unknown]> = [
    ['id_token_signed_response_alg', 'RS256'],
    ['id_token_signed_response_alg', 'none'],
    ['userinfo_signed_response_alg', 'RS256'],
    ['subject_type', 'pairwise'],
    ['request_object_signing_alg', 'none'],
    ['request_object_signing_alg', 'HS256'],
    ['application_type', 'desktop'],
    ['default_max_age', -1],
    ['default_max_age', '60'],
    ['require_auth_time', 'yes'],
    ['default_acr_values', ['urn:mace:incommon:iap:silver']],
    ['contacts', 'ops@example.com'],
  ];
  for (const [member, value] of refusedValues) {
    const refused = refusal({ ...keys, [member]: value });
    t.equal(refused?.reason, 'invalid_client_metadata', `${member}: ${JSON.stringify(value)}`);
    t.match(refused?.message, member, `${member}: named`);
  }
  const members = {
    application_type: 'native',
    contacts: ['ops@example.com'],
    subject_type: 'public',
    id_token_signed_response_alg: 'ES256',
    userinfo_signed_response_alg: 'ES256',
    request_object_signing_alg: 'PS256',
    default_max_age: 300,
    require_auth_time: true,
    default_acr_values: ['sensitive'],
    request_uris: ['https://a.example.com/request.jwt'],
    require_signed_request_object: true,
    software_id: 'notes',
    software_version: '1.2',
  };
  t.match(validateClientMetadata({ ...base, ...keys, ...members }), members);
});

t.test('token_endpoint_auth_signing_alg is for private_key_jwt clients only', async (t) => {
  t.match(refusal({ token_endpoint_auth_signing_alg: 'ES256' }), { reason: 'invalid_client_metadata' });
  t.match(
    refusal({ token_endpoint_auth_method: 'private_key_jwt', ...keys, token_endpoint_auth_signing_alg: 'HS256' }),
    { reason: 'invalid_client_metadata' },
  );
  t.equal(
    validateClientMetadata({
      ...base,
      ...keys,
      token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'ES256',
    }).token_endpoint_auth_signing_alg,
    'ES256',
  );
});

t.test('request objects need registered keys; any client may register them', async (t) => {
  for (const member of ['request_object_signing_alg', 'request_uris', 'require_signed_request_object'] as const) {
    const value =
      member === 'request_uris'
        ? ['https://a.example.com/r']
        : member === 'request_object_signing_alg'
          ? 'ES256'
          : true;
    const refused = refusal({ [member]: value });
    t.equal(refused?.reason, 'invalid_client_metadata', member);
    t.match(refused?.message, /needs jwks or jwks_uri/);
  }
  t.equal(validateClientMetadata({ ...base, ...keys }).jwks?.keys.length, 1, 'a secret client may register keys');
  t.match(refusal({ ...keys, request_uris: ['http://a.example.com/r'] }), { reason: 'invalid_client_metadata' });
});

t.test('backchannel_logout_uri: https, no fragment; session_required needs it', async (t) => {
  t.match(
    validateClientMetadata({
      ...base,
      backchannel_logout_uri: 'https://a.example.com/logout?x=1',
      backchannel_logout_session_required: true,
    }),
    { backchannel_logout_uri: 'https://a.example.com/logout?x=1', backchannel_logout_session_required: true },
  );
  for (const uri of ['http://localhost/logout', 'https://a.example.com/logout#f', 'https://u:p@a.example.com/l', 'x'])
    t.match(refusal({ backchannel_logout_uri: uri }), { reason: 'invalid_client_metadata' }, uri);
  t.match(refusal({ backchannel_logout_session_required: true }), { reason: 'invalid_client_metadata' });
});

t.test('frontchannel_logout_uri: a redirect URI origin, no fragment; session_required needs it', async (t) => {
  t.match(
    validateClientMetadata({
      ...base,
      frontchannel_logout_uri: 'https://a.example.com/logout?x=1',
      frontchannel_logout_session_required: true,
    }),
    { frontchannel_logout_uri: 'https://a.example.com/logout?x=1', frontchannel_logout_session_required: true },
  );
  t.match(
    validateClientMetadata({
      redirect_uris: ['http://localhost:8080/cb'],
      frontchannel_logout_uri: 'http://localhost:8080/fcl',
    }),
    { frontchannel_logout_uri: 'http://localhost:8080/fcl' },
    'http on loopback, like the redirect URI',
  );
  for (const uri of [
    'https://b.example.com/logout',
    'https://a.example.com:8443/logout',
    'http://a.example.com/logout',
    'https://a.example.com/logout#f',
    'https://u:p@a.example.com/l',
    'x',
  ])
    t.match(refusal({ frontchannel_logout_uri: uri }), { reason: 'invalid_client_metadata' }, uri);
  t.match(refusal({ frontchannel_logout_session_required: true }), { reason: 'invalid_client_metadata' });
});
