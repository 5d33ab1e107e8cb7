import t, { type Test } from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { ADMIN, authorizeUrl, obtainCode, pkcePair, redirectParams } from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['oidc', 'clients'] as const;

const GATEWAY = 'https://gw.example.com';
const ATTACKER_CALLBACK = 'https://attacker.example.net/cb';

async function setup(t: Test) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  // The operator's gateway (as `keyplane up` registers it): its public URL is its resource.
  const gateway = await built.app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: {
      client_name: 'Gateway',
      redirect_uris: [`${GATEWAY}/_gate/callback`],
      resources: [GATEWAY],
      scope: 'openid email offline_access',
      grant_types: ['authorization_code', 'refresh_token'],
      gateway: { mode: 'enforce', routes: [{ path: '/', min_assurance: 'passkey' }] },
    },
  });
  t.equal(gateway.statusCode, 201, gateway.body);
  return built;
}

function attackerClient(resources: string[]) {
  return {
    client_name: 'Free notes',
    redirect_uris: [ATTACKER_CALLBACK],
    token_endpoint_auth_method: 'none',
    resources,
    scope: 'openid',
  };
}

t.test("a signed-in user cannot register a client naming another owner's gateway URL as its resource", async (t) => {
  const { app, signIn } = await setup(t);
  const { browser } = await signIn({ username: 'mallory', assurance: 'sensitive' });
  for (const resource of [GATEWAY, `${GATEWAY}/api`, `${GATEWAY}:443/admin`]) {
    const res = await browser.post('/register', attackerClient([resource]));
    t.equal(res.statusCode, 400, resource);
    t.equal(res.json().reason, 'invalid_target', resource);
    t.equal(res.json().error, 'invalid_target');
    const apps = await browser.post('/apps/register', attackerClient([resource]));
    t.equal(apps.json().reason, 'invalid_target', `/apps/register ${resource}`);
  }
  // Nor by editing a client it owns.
  const own = await browser.post('/register', attackerClient(['https://api.attacker.example.net']));
  t.equal(own.statusCode, 201, own.body);
  const { client_id: clientId, revision } = own.json();
  const edit = await browser.post(`/apps/${clientId}/update`, { revision, resources: [GATEWAY] });
  t.equal(edit.json().reason, 'invalid_target', 'an owner edit');
  const token = own.json().registration_access_token;
  const put = await app.inject({
    method: 'PUT',
    url: `/register/${clientId}`,
    headers: { authorization: `Bearer ${token}` },
    payload: { client_id: clientId, revision, ...attackerClient([GATEWAY]) },
  });
  t.equal(put.json().reason, 'invalid_target', 'an RFC 7592 update');
  // Another origin on the same host is not the gateway's.
  t.equal((await browser.post('/register', attackerClient(['https://gw.example.com:8443']))).statusCode, 201);
});

t.test("the gateway's owner and the operator may name it", async (t) => {
  const { app, signIn } = await setup(t);
  const admin = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: attackerClient([GATEWAY]),
  });
  t.equal(admin.statusCode, 201, 'the admin token');
  const { browser } = await signIn({ username: 'olive' });
  const mine = await browser.post('/register', {
    redirect_uris: ['https://olive-gw.example.org/_gate/callback'],
    resources: ['https://olive-gw.example.org'],
    gateway: { mode: 'enforce', routes: [{ path: '/' }] },
  });
  t.equal(mine.statusCode, 201, mine.body);
  t.equal(
    (await browser.post('/register', attackerClient(['https://olive-gw.example.org/api']))).statusCode,
    201,
    'her own API client',
  );
  const { browser: other } = await signIn({ username: 'mallory' });
  t.equal(
    (await other.post('/register', attackerClient(['https://olive-gw.example.org']))).json().reason,
    'invalid_target',
    'someone else',
  );
});

t.test("the attack end to end: a victim's session visiting the attacker's prompt=none link gets no code", async (t) => {
  const { app, signIn } = await setup(t);
  // Mallory tries to register a client for the gateway and is refused...
  const { browser: mallory } = await signIn({ username: 'mallory' });
  t.equal((await mallory.post('/register', attackerClient([GATEWAY]))).json().reason, 'invalid_target');
  // ...and even with such a client (say, one the operator registered carelessly), a silent request gets no code.
  const careless = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: attackerClient([GATEWAY]),
  });
  const clientId = careless.json().client_id as string;
  const { browser: victim } = await signIn({ username: 'victim' });
  const { challenge } = pkcePair();
  const silent = await victim.get(
    authorizeUrl({
      client_id: clientId,
      redirect_uri: ATTACKER_CALLBACK,
      response_type: 'code',
      scope: 'openid',
      resource: GATEWAY,
      prompt: 'none',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's',
    }),
  );
  t.equal(silent.statusCode, 302);
  const params = redirectParams(silent);
  t.equal(params.get('error'), 'consent_required', 'OIDC Core §3.1.2.6');
  t.notOk(params.get('code'), 'no code');

  // Without prompt=none the victim sees the page, which names the gateway.
  const page = await victim.get(
    authorizeUrl({
      client_id: clientId,
      redirect_uri: ATTACKER_CALLBACK,
      response_type: 'code',
      scope: 'openid',
      resource: GATEWAY,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }),
  );
  t.equal(page.statusCode, 200);
  t.match(page.body, /data-action="continue"/);
  t.match(
    page.body,
    new RegExp(`<ul data-field="resources"><li><code>${GATEWAY.replace(/\./g, '\\.')}</code></li></ul>`),
    'the consent page names the resource',
  );
});

t.test('an approval covers only the resources it named: a new resource asks again', async (t) => {
  const { app, signIn } = await setup(t);
  const registered = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: { ...attackerClient(['https://api.example.org', 'https://files.example.org']) },
  });
  const clientId = registered.json().client_id as string;
  const { browser } = await signIn({ username: 'ada' });
  const { challenge } = pkcePair();
  const request = (extra: Record<string, string>) =>
    authorizeUrl({
      client_id: clientId,
      redirect_uri: ATTACKER_CALLBACK,
      response_type: 'code',
      scope: 'openid',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    });
  const params = (extra: Record<string, string>) => ({
    client_id: clientId,
    redirect_uri: ATTACKER_CALLBACK,
    response_type: 'code',
    scope: 'openid',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  });
  await obtainCode(browser, params({ resource: 'https://api.example.org' }));
  const again = await browser.get(request({ resource: 'https://api.example.org', prompt: 'none' }));
  t.ok(redirectParams(again).get('code'), 'the approved resource: a code at once');
  const other = await browser.get(request({ resource: 'https://files.example.org', prompt: 'none' }));
  t.equal(redirectParams(other).get('error'), 'consent_required', 'a resource never approved');
  const noResource = await browser.get(request({ prompt: 'none' }));
  t.ok(redirectParams(noResource).get('code'), 'no resource: the scopes alone were approved');
  const shown = await browser.get(request({ resource: 'https://files.example.org' }));
  t.match(shown.body, /files\.example\.org/, 'the page names the new resource');
});
