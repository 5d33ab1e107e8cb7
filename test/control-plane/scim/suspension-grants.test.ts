import t from 'tap';
import { MemorySharedState } from '#lib/runtime/shared-state/memory.js';
import * as oidc from '../../helpers/oidc.js';
import { buildWatched } from '../../helpers/watched.js';

t.test("a SCIM suspension refuses the account's refresh token and ends its access tokens", async (t) => {
  const { app, signIn, services } = await buildWatched(t, (clock) => ({
    state: new MemorySharedState(clock.now),
    config: { adminToken: oidc.ADMIN },
  }));
  const owner = await signIn({ username: 'olivia', assurance: 'sensitive' });
  t.equal((await owner.browser.post('/auth/orgs/create', { name: 'Acme' })).statusCode, 200);
  const { token } = (await owner.browser.post('/org/acme/scim-tokens')).json() as { token: string };
  const scim = (method: 'POST' | 'PATCH', path: string, body: unknown) =>
    app.inject({
      method,
      url: `/scim/v2/orgs/acme${path}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
      payload: JSON.stringify(body),
    });
  const created = await scim('POST', '/Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'eve@acme.example',
  });
  const { id } = created.json();
  const { browser } = await signIn({ username: (await services.storage.identities.get(id))!.username });
  const client = await oidc.registerClient(app);
  const { verifier, challenge } = oidc.pkcePair();
  const tokens = (
    await oidc.exchangeCode(
      app,
      client,
      (await oidc.obtainCode(browser, oidc.goodRequest(client, challenge))).code,
      verifier,
    )
  ).json();
  const active = async (value: string) =>
    (
      await app.inject({
        method: 'POST',
        url: '/auth/introspect',
        headers: { authorization: oidc.basicAuth(client) },
        payload: { token: value },
      })
    ).json().active as boolean;
  t.equal(await active(tokens.access_token), true);

  const suspended = await scim('PATCH', `/Users/${id}`, {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
    Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
  });
  t.equal(suspended.statusCode, 200, suspended.body);
  t.match((await oidc.refresh(app, client, tokens.refresh_token)).json(), { reason: 'invalid_grant' });
  t.equal(await active(tokens.access_token), false, 'the access token ends with its grant');
});
