import t from 'tap';
import {
  ACCESS_TOKEN_TYPE,
  JWT_TOKEN_TYPE,
  actorClaim,
  narrowScopes,
  readExchangeRequest,
} from '#lib/oauth/token-exchange.js';

const reasonOf = (work: () => unknown) => {
  try {
    work();
    return undefined;
  } catch (error) {
    return (error as { reason?: string }).reason;
  }
};

t.test('an exchange request names an access token and nothing this server does not offer', async (t) => {
  const good = { subject_token: 'a.b.c', subject_token_type: ACCESS_TOKEN_TYPE };
  t.same(readExchangeRequest(good), { subjectToken: 'a.b.c' });
  t.same(readExchangeRequest({ ...good, scope: 'email' }), { subjectToken: 'a.b.c', scopes: ['email'] });
  t.equal(
    reasonOf(() => readExchangeRequest({ subject_token_type: ACCESS_TOKEN_TYPE })),
    'invalid_request',
  );
  t.equal(
    reasonOf(() => readExchangeRequest({ ...good, subject_token_type: 'urn:x' })),
    'invalid_request',
  );
  t.equal(
    reasonOf(() => readExchangeRequest({ ...good, requested_token_type: 'urn:x' })),
    'invalid_request',
  );
  t.equal(
    reasonOf(() => readExchangeRequest({ ...good, actor_token: 'x' })),
    'invalid_request',
    'an actor token without its type',
  );
  t.equal(
    reasonOf(() => readExchangeRequest({ ...good, actor_token_type: ACCESS_TOKEN_TYPE })),
    'invalid_request',
    'an actor token type without a token',
  );
  t.equal(
    reasonOf(() =>
      readExchangeRequest({ ...good, actor_token: 'x', actor_token_type: 'urn:ietf:params:oauth:token-type:id_token' }),
    ),
    'invalid_request',
    'an actor token type not accepted',
  );
  t.same(readExchangeRequest({ ...good, actor_token: 'x.y.z', actor_token_type: JWT_TOKEN_TYPE }), {
    subjectToken: 'a.b.c',
    actor: { token: 'x.y.z', type: JWT_TOKEN_TYPE },
  });
  t.equal(
    reasonOf(() => readExchangeRequest({ ...good, audience: 'x' })),
    'invalid_target',
  );
});

t.test('scopes only narrow; act nests earlier actors, to a bounded depth', async (t) => {
  t.same(narrowScopes(['openid', 'email', 'offline_access'], undefined), ['openid', 'email']);
  t.same(narrowScopes(['openid', 'email'], ['email']), ['email']);
  t.equal(
    reasonOf(() => narrowScopes(['email'], ['profile'])),
    'invalid_scope',
  );
  t.equal(
    reasonOf(() => narrowScopes(['offline_access'], ['offline_access'])),
    'invalid_scope',
  );
  t.same(actorClaim('cl_b', undefined), { sub: 'cl_b' });
  t.same(actorClaim('cl_b', { sub: 'cl_a' }), { sub: 'cl_b', act: { sub: 'cl_a' } });
  t.equal(
    reasonOf(() => actorClaim('cl_b', { name: 'x' })),
    'invalid_request',
  );
  let deep: { sub: string; act?: unknown } = { sub: 'c0' };
  for (let i = 1; i < 6; i++) deep = { sub: `c${i}`, act: deep };
  t.equal(
    reasonOf(() => actorClaim('cl_z', deep)),
    'invalid_request',
  );
});
