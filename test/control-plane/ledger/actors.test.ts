import t from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { ADMIN } from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers).
const areas = ['account', 'orgs', 'clients', 'admin'] as const;

t.test('receipts name who acted where the derived default was wrong', async (t) => {
  const { app, signIn } = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const actorOf = async (hash: string) => {
    const stored = await app.kp.storage.receipts.get(hash);
    return (JSON.parse(stored!.body) as { actor: unknown }).actor;
  };
  const { browser, identityId } = await signIn({ username: 'olga', assurance: 'sensitive' });
  const slug = (await browser.post('/auth/orgs/create', { name: 'Olga Org' })).json().slug as string;

  // `by: "session"` named no one: the person who registered acted, for an org too.
  const own = await browser.post('/apps/register', {
    client_name: 'Mine',
    redirect_uris: ['https://mine.example/cb'],
    token_endpoint_auth_method: 'client_secret_basic',
  });
  t.equal(own.statusCode, 201, own.body);
  t.same(await actorOf(own.json().receipt), { type: 'person', id: identityId });
  const org = await browser.post('/apps/register', {
    client_name: 'Org',
    redirect_uris: ['https://o.example/cb'],
    org: slug,
  });
  t.same(await actorOf(org.json().receipt), { type: 'person', id: identityId }, "the org's client: the person");

  const rotated = await app.inject({
    method: 'POST',
    url: `/admin/clients/${own.json().client_id}/rotate-secret`,
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  t.equal(rotated.statusCode, 200, rotated.body);
  t.same(await actorOf(rotated.json().receipt), { type: 'admin_token' }, "the operator's rotation: the admin token");
  const revoked = await app.inject({
    method: 'POST',
    url: `/admin/clients/${org.json().client_id}/revoke`,
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  t.equal(revoked.statusCode, 200, revoked.body);
  t.same(await actorOf(revoked.json().receipt), { type: 'admin_token' });
});
