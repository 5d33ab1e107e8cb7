import t from 'tap';
import { buildSignedIn, type Browser } from '../../helpers/signed-in.js';
import { ADMIN } from '../../helpers/oidc.js';

/**
 * Access rules name only orgs the client's owner administers (docs/security.md#rules-name-only-administered-orgs):
 * the attack registered a client whose `access.orgs` (or gateway `allow`) named someone else's
 * org, so that the signed gateway config carried that org's member directory to the attacker.
 */
const client = {
  client_name: 'Portal',
  redirect_uris: ['https://portal.example.net/callback'],
  token_endpoint_auth_method: 'client_secret_basic',
};
const gateway = (allow: Record<string, unknown>) => ({
  ...client,
  gateway: { mode: 'enforce', routes: [{ path: '/', allow }] },
});

t.test("a client's rules may name only orgs its owner administers; the operator may name any", async (t) => {
  const built = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const olivia = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  const mel = await built.signIn({ username: 'mel', assurance: 'sensitive' });
  const ok = async (browser: Browser, url: string, body: Record<string, unknown> = {}) => {
    const res = await browser.post(url, body);
    if (res.statusCode >= 300) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  await ok(olivia.browser, '/auth/orgs/create', { name: 'Acme' });
  await ok(olivia.browser, '/org/acme/members/invite', { username: 'mel', role: 'member' });
  await ok(mel.browser, '/org/acme/members/accept');
  await ok(mel.browser, '/auth/orgs/create', { name: 'Mel Co' });

  const refused = async (browser: Browser, body: Record<string, unknown>, what: string) => {
    const res = await browser.post('/register', body);
    t.equal(res.statusCode, 400, `${what}: ${res.body}`);
    t.equal(res.json().reason, 'invalid_client_metadata', what);
  };
  await refused(
    mel.browser,
    { ...client, access: { orgs: [{ slug: 'acme' }] } },
    'access.orgs naming an org where the owner is a member',
  );
  await refused(mel.browser, gateway({ orgs: [{ slug: 'ACME' }] }), 'a gateway allow naming it, in any case');
  await refused(mel.browser, gateway({ agent_owners_in: ['acme'] }), 'agent_owners_in naming it');
  await refused(
    mel.browser,
    { ...client, org: 'mel-co', access: { orgs: [{ slug: 'acme' }] } },
    'an org-owned client naming another org',
  );

  const own = await mel.browser.post('/register', { ...client, access: { orgs: [{ slug: 'mel-co' }] } });
  t.equal(own.statusCode, 201, 'an org the owner administers');
  const forOrg = await olivia.browser.post('/register', { ...gateway({ orgs: [{ slug: 'acme' }] }), org: 'acme' });
  t.equal(forOrg.statusCode, 201, 'an org-owned client naming its own org');

  // Nor by an edit (RFC 7592) of a client the owner already has.
  const { client_id: clientId, registration_access_token: token, revision } = own.json();
  const put = await built.app.inject({
    method: 'PUT',
    url: `/register/${clientId}`,
    headers: { authorization: `Bearer ${token}` },
    payload: { client_id: clientId, revision, ...client, access: { orgs: [{ slug: 'acme' }] } },
  });
  t.equal(put.json().reason, 'invalid_client_metadata', 'an RFC 7592 update');

  const admin = await built.app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: { ...client, access: { orgs: [{ slug: 'acme' }, { slug: 'mel-co' }] } },
  });
  t.equal(admin.statusCode, 201, 'the admin token names any org');
});
