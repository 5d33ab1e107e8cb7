import t from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import {
  ADMIN,
  authorizeUrl,
  exchangeCode,
  goodRequest,
  pkcePair,
  redirectParams,
  refresh,
  registerClient,
} from '../../helpers/oidc.js';

t.test("first_party is the operator's: a session asking for it is refused with invalid_client_metadata", async (t) => {
  const { app, signIn } = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const { browser } = await signIn({ username: 'mallory', assurance: 'sensitive' });
  const body = { redirect_uris: ['https://app.example.net/cb'], token_endpoint_auth_method: 'none', first_party: true };
  for (const path of ['/register', '/apps/register']) {
    const res = await browser.post(path, body);
    t.equal(res.statusCode, 400, path);
    t.equal(res.json().reason, 'invalid_client_metadata', path);
  }
  const own = await browser.post('/register', { ...body, first_party: false });
  t.equal(own.statusCode, 201, 'false is the default and allowed');
  t.notOk(own.json().first_party);
  const edit = await browser.post(`/apps/${own.json().client_id}/update`, {
    revision: own.json().revision,
    first_party: true,
  });
  t.equal(edit.json().reason, 'invalid_client_metadata', 'nor by an edit');
  const put = await app.inject({
    method: 'PUT',
    url: `/register/${own.json().client_id}`,
    headers: { authorization: `Bearer ${own.json().registration_access_token}` },
    payload: { client_id: own.json().client_id, revision: own.json().revision, ...body },
  });
  t.equal(put.json().reason, 'invalid_client_metadata', 'nor by an RFC 7592 update');
  t.equal(
    (await browser.post('/register', { ...body, first_party: 'yes' })).json().reason,
    'invalid_client_metadata',
    'a boolean',
  );
  const admin = await registerClient(app, { first_party: true });
  t.ok(admin.client_id, 'the admin token may');
});

t.test('a first-party client skips the approval page; its grants still end with the session', async (t) => {
  const { app, signIn } = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const client = await registerClient(app, { first_party: true });
  const { browser } = await signIn({ username: 'ada' });
  const { verifier, challenge } = pkcePair();
  const silent = await browser.get(authorizeUrl(goodRequest(client, challenge, { prompt: 'none' })));
  t.ok(redirectParams(silent).get('code'), 'prompt=none: a code, no approval needed');
  const res = await browser.get(authorizeUrl(goodRequest(client, challenge)));
  t.equal(res.statusCode, 302, 'no one-tap page');
  const tokens = (await exchangeCode(app, client, redirectParams(res).get('code')!, verifier)).json();
  t.ok(tokens.refresh_token);
  const asked = await browser.get(authorizeUrl(goodRequest(client, challenge, { prompt: 'consent' })));
  t.match(asked.body, /data-action="continue"/, 'prompt=consent still shows the page');
  await browser.post('/auth/signout');
  t.equal(
    (await refresh(app, client, tokens.refresh_token)).json().error,
    'invalid_grant',
    'skipping the page is no offline approval',
  );
});
