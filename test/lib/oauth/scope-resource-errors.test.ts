import t from 'tap';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { authorizationErrorParams, oauthError, oauthFields } from '#lib/oauth/errors.js';
import { checkResource, validateResourceForRegistration } from '#lib/oauth/resource.js';
import { formatScope, parseScope } from '#lib/oauth/scope.js';
import { reasonOf } from '../../helpers/reason-of.js';

t.test('parses scope into ordered unique tokens', async (t) => {
  t.same(parseScope('openid email openid offline_access'), ['openid', 'email', 'offline_access']);
  t.same(parseScope(undefined), []);
  t.same(parseScope(''), []);
  t.equal(formatScope(['openid', 'email', 'openid']), 'openid email');
});

t.test('refuses malformed scope with invalid_scope', async (t) => {
  for (const bad of ['openid  email', ' openid', 'openid ', 'open"id', 'open\\id', 'openid\temail', 42]) {
    t.equal(
      reasonOf(() => parseScope(bad)),
      'invalid_scope',
      JSON.stringify(bad),
    );
  }
});

t.test('accepts only an exactly registered resource', async (t) => {
  const registered = ['https://api.example.com', 'https://api.example.com/v2'];
  t.equal(checkResource(registered, 'https://api.example.com'), 'https://api.example.com');
  t.equal(checkResource(registered, ['https://api.example.com/v2']), 'https://api.example.com/v2');
  t.equal(checkResource(registered, undefined), undefined);
  t.equal(checkResource(registered, []), undefined);
  for (const bad of [
    'https://api.example.com/',
    'https://API.example.com',
    'https://api.example.com/v2/x',
    'https://api.example.com?x',
    'https://other.example.com',
    '',
    7,
  ]) {
    t.equal(
      reasonOf(() => checkResource(registered, bad)),
      'invalid_target',
      JSON.stringify(bad),
    );
  }
  t.equal(
    reasonOf(() => checkResource(registered, registered)),
    'invalid_target',
    'several resources at once',
  );
  try {
    checkResource(registered, 'https://nope.example.com');
  } catch (error) {
    t.match(isKeyplaneError(error) && error.toEnvelope(), {
      ok: false,
      reason: 'invalid_target',
      error: 'invalid_target',
      error_description: String,
    });
  }
});

t.test('validates resource URIs at registration', async (t) => {
  t.equal(validateResourceForRegistration('https://api.example.com/v1'), null);
  t.equal(validateResourceForRegistration('http://localhost:9000'), null);
  for (const bad of ['http://api.example.com', 'https://api.example.com#f', 'api.example.com', '', 'https://a b'])
    t.type(validateResourceForRegistration(bad), 'string', bad);
});

t.test('builds RFC 6749 error fields', async (t) => {
  t.same(oauthFields('invalid_grant', 'expired'), { error: 'invalid_grant', error_description: 'expired' });
  t.same(oauthFields('invalid_grant'), { error: 'invalid_grant' });
  const error = oauthError('unauthorized', 'bad client', {
    error: 'invalid_client',
    headers: { 'www-authenticate': 'Basic' },
  });
  t.equal(error.status, 401);
  t.same(error.toEnvelope(), {
    ok: false,
    reason: 'unauthorized',
    message: 'bad client',
    error: 'invalid_client',
    error_description: 'bad client',
  });
  t.same(error.headers, { 'www-authenticate': 'Basic' });
  t.same(authorizationErrorParams({ error: 'access_denied', state: 's1', iss: 'https://id.example.com' }), {
    error: 'access_denied',
    state: 's1',
    iss: 'https://id.example.com',
  });
});
