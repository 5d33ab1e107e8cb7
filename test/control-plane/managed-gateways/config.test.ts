import t from 'tap';
import { decodeProtectedHeader } from 'jose';
import { verifyGatewayConfig } from '#lib/gateway-protocol/signed-config.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { TEST_ISSUER } from '../../helpers/build.js';
import { basicAuth } from '../../helpers/oidc.js';
import { POLICY, getConfig, registerGateway, setup, updatePolicy } from './setup.js';

async function jwks(app: Parameters<typeof getConfig>[0]) {
  return (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
}

t.test("serves the client's policy as a JWS that the gateway's verifier accepts", async (t) => {
  const { app, clock, services } = await setup(t);
  const client = await registerGateway(app);
  const res = await getConfig(app, client);
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/jwt/);
  t.equal(res.headers['cache-control'], 'no-store');
  t.equal(res.headers['etag'], `"${sha256Hex(res.body)}"`, 'a strong ETag: the quoted SHA-256 of the JWS');
  const header = decodeProtectedHeader(res.body);
  t.equal(header.typ, 'keyplane-gateway-config+jwt');
  t.equal(header.alg, 'ES256');
  const keys = await jwks(app);
  t.equal(header.kid, services.keys.current().kid, 'signed with the current key');
  t.ok(
    keys.keys.some((key: { kid: string }) => key.kid === header.kid),
    'which the JWKS lists',
  );
  const document = await verifyGatewayConfig(res.body, {
    keys,
    issuer: TEST_ISSUER,
    clientId: client.client_id,
    now: clock.now(),
  });
  t.equal(document.version, 1);
  t.same(document.policy, POLICY);
  t.equal(document.exp - Math.floor(clock.now() / 1000), 86_400, 'valid for 24 hours');
});

t.test('refuses callers that are not the client, and clients without a gateway policy', async (t) => {
  const { app } = await setup(t);
  const client = await registerGateway(app);
  const none = await app.inject({ method: 'GET', url: '/gateway/config' });
  t.equal(none.statusCode, 401);
  t.equal(none.json().reason, 'invalid_client');
  const wrong = await getConfig(app, { ...client, client_secret: 'not-the-secret' });
  t.equal(wrong.statusCode, 401);
  t.equal(wrong.json().reason, 'invalid_client');
  t.match(wrong.headers['www-authenticate'], /^Basic/);
  const unknown = await getConfig(app, { client_id: 'cl_nobody', client_secret: 'x' });
  t.equal(unknown.statusCode, 401);
  const bearer = await app.inject({
    method: 'GET',
    url: '/gateway/config',
    headers: { authorization: `Bearer ${client.client_secret}` },
  });
  t.equal(bearer.statusCode, 401, 'only client authentication opens it');

  const plain = await registerGateway(app, {});
  const missing = await getConfig(app, plain);
  t.equal(missing.statusCode, 404);
  t.equal(missing.json().reason, 'no_gateway_policy');
});

t.test('the same document comes back until something changes, and a matching If-None-Match gets 304', async (t) => {
  const { app, clock } = await setup(t);
  const client = await registerGateway(app);
  const first = await getConfig(app, client);
  clock.advance(3_600_000);
  const again = await getConfig(app, client);
  t.equal(again.body, first.body, 'byte for byte: the gateway would refuse another JWS of the same version');
  const etag = String(first.headers['etag']);
  const cached = await getConfig(app, client, { 'if-none-match': etag });
  t.equal(cached.statusCode, 304);
  t.equal(cached.body, '');
  t.equal(cached.headers['etag'], etag);
  t.equal(
    (await getConfig(app, client, { 'if-none-match': `"other", W/${etag}` })).statusCode,
    304,
    'weak comparison in a list',
  );
  t.equal((await getConfig(app, client, { 'if-none-match': '"other"' })).statusCode, 200);
});

t.test('a registration update is a new version; so is a key rotation and a config past half its life', async (t) => {
  const { app, clock, services } = await setup(t);
  const client = await registerGateway(app);
  const v1 = await getConfig(app, client);
  const issuer = { issuer: TEST_ISSUER, clientId: client.client_id };

  await updatePolicy(app, client, { mode: 'observe', routes: [{ path: '/', public: true }] });
  const v2 = await getConfig(app, client, { 'if-none-match': String(v1.headers['etag']) });
  t.equal(v2.statusCode, 200, 'the old ETag no longer matches');
  const doc2 = await verifyGatewayConfig(v2.body, { keys: await jwks(app), ...issuer, now: clock.now() });
  t.equal(doc2.version, 2);
  t.equal(doc2.policy.mode, 'observe');

  const rotated = await services.keys.rotate();
  const v3 = await getConfig(app, client);
  const doc3 = await verifyGatewayConfig(v3.body, { keys: await jwks(app), ...issuer, now: clock.now() });
  t.equal(doc3.version, 3, 'the same policy signed again by the new key');
  t.equal(decodeProtectedHeader(v3.body).kid, rotated.current);

  clock.advance(11 * 3_600_000);
  t.equal((await getConfig(app, client)).body, v3.body, 'before half its lifetime the config is served as it is');
  clock.advance(2 * 3_600_000);
  const v4 = await verifyGatewayConfig((await getConfig(app, client)).body, {
    keys: await jwks(app),
    ...issuer,
    now: clock.now(),
  });
  t.equal(v4.version, 4, 'past half its lifetime a fresh copy is issued, so no gateway holds one near expiry');
});

t.test('an update whose policy only reorders members keeps the version', async (t) => {
  const { app } = await setup(t);
  const client = await registerGateway(app);
  const v1 = await getConfig(app, client);
  await updatePolicy(app, client, {
    routes: POLICY.routes.map((route) => Object.fromEntries(Object.entries(route).reverse())),
    mode: 'enforce',
  });
  t.equal((await getConfig(app, client)).body, v1.body, 'compared as RFC 8785 canonical JSON');
});

t.test('concurrent requests after an update issue exactly one new version', async (t) => {
  const { app, services } = await setup(t);
  const client = await registerGateway(app);
  await getConfig(app, client);
  await updatePolicy(app, client, { mode: 'observe', routes: [] });
  const answers = await Promise.all(Array.from({ length: 12 }, () => getConfig(app, client)));
  t.same(new Set(answers.map((res) => res.statusCode)), new Set([200]));
  t.equal(new Set(answers.map((res) => res.body)).size, 1, 'every caller got the same JWS');
  t.equal((await services.storage.gateway.latestConfig(client.client_id))?.version, 2);
});

t.test('a client registered for client_secret_post cannot use Basic here', async (t) => {
  const { app } = await setup(t);
  const client = await registerGateway(app, { gateway: POLICY, token_endpoint_auth_method: 'client_secret_post' });
  const res = await app.inject({
    method: 'GET',
    url: '/gateway/config',
    headers: { authorization: basicAuth(client) },
  });
  t.equal(res.statusCode, 401);
  t.equal(res.json().reason, 'invalid_client');
});

t.test('every new version is a receipted gateway.config_issued event; serving it again records nothing', async (t) => {
  const { app, services } = await setup(t);
  const seen: Array<Record<string, unknown>> = [];
  services.events.subscribe((_tx, event) => {
    if (event.type === 'gateway.config_issued') seen.push(event as unknown as Record<string, unknown>);
  });
  const client = await registerGateway(app);
  const first = await getConfig(app, client);
  await getConfig(app, client);
  t.match(seen, [
    {
      type: 'gateway.config_issued',
      clientId: client.client_id,
      version: 1,
      configHash: sha256Hex(first.body),
      mode: POLICY.mode,
      kid: services.keys.current().kid,
    },
  ]);
  t.equal(seen.length, 1, 'the same version served twice is one event');
  t.notOk(
    Object.keys(seen[0]!).some((name) => /jws|secret/i.test(name)),
    'the event names the config by hash only',
  );
});
