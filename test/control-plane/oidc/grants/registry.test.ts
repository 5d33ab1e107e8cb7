import t from 'tap';
import { readFileSync } from 'node:fs';
import { GRANT_TYPES } from '#lib/oauth/grant-types.js';
import { TOKEN_GRANTS } from '../../../../control-plane/src/oidc/grants/registry.js';
import { build } from '../../../helpers/build.js';
import { ADMIN, registerClient } from '../../../helpers/oidc.js';

/**
 * Each grant type is declared once (lib/oauth/grant-types.ts): the token endpoint's dispatch,
 * discovery, the registration validator and its cap read that list, so a new grant is its module
 * and one line in each registry (docs/architecture.md#adding-a-grant).
 */

t.test('the dispatch has one entry per declared grant, and no other', async (t) => {
  t.same(Object.keys(TOKEN_GRANTS).sort(), [...GRANT_TYPES].sort());
});

t.test('discovery lists exactly the declared grants', async (t) => {
  const { app } = await build(t, { areas: ['oidc', 'discovery', 'clients'] });
  const doc = (await app.inject('/.well-known/openid-configuration')).json();
  t.same([...doc.grant_types_supported].sort(), [...GRANT_TYPES].sort());
  const rfc8414 = (await app.inject('/.well-known/oauth-authorization-server')).json();
  t.same([...rfc8414.grant_types_supported].sort(), [...GRANT_TYPES].sort());
});

t.test('registration accepts every declared grant at once (the cap is the count) and nothing else', async (t) => {
  const { app } = await build(t, { areas: ['oidc', 'discovery', 'clients'], config: { adminToken: ADMIN } });
  const all = await registerClient(app, { grant_types: [...GRANT_TYPES], access: { humans: true, agents: true } });
  t.ok(all.client_id, 'a client may register every grant the provider offers');
  const res = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: {
      redirect_uris: ['https://notes.example.com/callback'],
      grant_types: ['authorization_code', 'urn:example:not-a-grant'],
    },
  });
  t.equal(res.statusCode, 400);
  t.equal(res.json().reason, 'invalid_client_metadata');
  for (const type of GRANT_TYPES) t.match(res.json().error_description, type, `the refusal names ${type}`);
});

t.test('the token endpoint refuses an undeclared grant, naming the declared ones', async (t) => {
  const { app } = await build(t, { areas: ['oidc', 'discovery', 'clients'], config: { adminToken: ADMIN } });
  const client = await registerClient(app, { token_endpoint_auth_method: 'none' });
  const res = await app.inject({
    method: 'POST',
    url: '/auth/token',
    payload: new URLSearchParams({ client_id: client.client_id, grant_type: 'password' }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'unsupported_grant_type');
  for (const type of GRANT_TYPES) t.match(res.json().error_description, type);
});

t.test('grant types are named by no route but through the registry', async (t) => {
  // The token route dispatches through TOKEN_GRANTS and advertises GRANT_TYPES: no grant of its own.
  const token = readFileSync('control-plane/src/routes/oidc/token.ts', 'utf8');
  t.notMatch(token, /urn:ietf:params:oauth:grant-type|'authorization_code'|'refresh_token'|_GRANT\b/);
  t.notMatch(token, /grants\/(authorization-code|refresh-token|jwt-bearer|device-code|token-exchange)\.js/);
  // No other route adds to grant_types_supported.
  for (const file of [
    'control-plane/src/routes/oidc/device.ts',
    'control-plane/src/routes/oidc/authorize-documents.ts',
    'control-plane/src/routes/oidc/par.ts',
  ])
    t.notMatch(readFileSync(file, 'utf8'), /grant_types_supported/, file);
  // Registration caps grant_types by the registry's count, not a number of its own.
  t.match(readFileSync('lib/oauth/client-metadata.ts', 'utf8'), /'grant_types', GRANT_TYPES\.length\)/);
});
