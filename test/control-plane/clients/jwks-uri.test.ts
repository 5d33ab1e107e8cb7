import { createServer, type AddressInfo } from 'node:net';
import t from 'tap';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { TEST_ISSUER, build, manualClock } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { ADMIN, REDIRECT, pkcePair, registerClient } from '../../helpers/oidc.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';
import { RemoteKeySets } from '../../../control-plane/src/clients/remote-key-sets.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['clients', 'oidc'] as const;

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** A local listener that records everything it is sent (the issue's "internal admin" service). */
async function internalListener(t: { teardown(fn: () => unknown): void }) {
  const seen = { connections: 0, bytes: '' };
  const server = createServer((socket) => {
    seen.connections += 1;
    socket.on('data', (chunk) => (seen.bytes += chunk.toString()));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, seen };
}

function tokenRequest(clientId: string, assertion: string) {
  return new URLSearchParams({
    grant_type: 'authorization_code',
    code: 'no-such-code',
    redirect_uri: REDIRECT,
    code_verifier: pkcePair().verifier,
    client_id: clientId,
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    client_assertion: assertion,
  }).toString();
}

/** A client assertion stamped at `nowMs` (the control plane's clock; the wall clock by default). */
function signAssertion(clientId: string, key: CryptoKey, kid: string, jti: string, nowMs = Date.now()) {
  const iat = Math.floor(nowMs / 1000);
  return new SignJWT({ jti })
    .setProtectedHeader({ alg: 'ES256', kid })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(`${TEST_ISSUER}/auth/token`)
    .setIssuedAt(iat)
    .setExpirationTime(iat + 120)
    .sign(key);
}

t.test('a signed-in user cannot register a jwks_uri on loopback, and nothing is ever sent there', async (t) => {
  const internal = await internalListener(t);
  const { app, signIn } = await buildSignedIn(t, { areas });
  const { browser, identityId } = await signIn({ username: 'mallory' });
  const base = { redirect_uris: ['https://notes.example.com/callback'], token_endpoint_auth_method: 'private_key_jwt' };
  const refused = [
    `http://127.0.0.1:${internal.port}/internal-admin?probe=1`,
    `https://127.0.0.1:${internal.port}/internal-admin?probe=1`,
    `https://localhost:${internal.port}/internal-admin`,
    `https://[::ffff:127.0.0.1]:${internal.port}/internal-admin`,
    'https://169.254.169.254/latest/meta-data/',
    'https://10.0.0.1/jwks',
    'https://[fd00::1]/jwks',
    'https://user:pw@keys.example.com/jwks',
  ];
  for (const jwksUri of refused) {
    const res = await browser.post('/register', { ...base, jwks_uri: jwksUri });
    t.equal(res.statusCode, 400, jwksUri);
    t.match(res.json(), { ok: false, reason: 'invalid_client_metadata', error: 'invalid_client_metadata' }, jwksUri);
  }
  const viaApps = await browser.post('/apps/register', {
    ...base,
    client_name: 'Probe',
    jwks_uri: `https://127.0.0.1:${internal.port}/internal-admin`,
  });
  t.equal(viaApps.json().reason, 'invalid_client_metadata');
  t.equal(internal.seen.connections, 0);
  t.equal(internal.seen.bytes, '');
  t.same(await app.kp.storage.clients.listByOwner(identityId), [], 'no client was stored');
});

t.test("an update cannot move a client's keys to a private jwks_uri either", async (t) => {
  const internal = await internalListener(t);
  const { app, services } = await build(t, { areas, config: { adminToken: ADMIN } });
  const client = await registerClient(app, {
    token_endpoint_auth_method: 'private_key_jwt',
    jwks: { keys: [await exportJWK((await generateKeyPair('ES256')).publicKey)] },
  });
  const { jwks: _jwks, ...metadata } = (await services.storage.clients.get(client.client_id))!.metadata;
  const res = await app.inject({
    method: 'PUT',
    url: `/register/${client.client_id}`,
    headers: {
      authorization: `Bearer ${(client as unknown as { registration_access_token: string }).registration_access_token}`,
    },
    payload: {
      ...metadata,
      client_id: client.client_id,
      revision: 1,
      jwks_uri: `https://127.0.0.1:${internal.port}/jwks`,
    },
  });
  t.equal(res.statusCode, 400);
  t.equal(res.json().reason, 'invalid_client_metadata', res.body);
  t.equal(internal.seen.connections, 0);
});

t.test('registration with private targets allowed checks the jwks_uri but fetches nothing', async (t) => {
  const tls = makeTestCa(t);
  const keys = await startHttpsServer(t, tls, (_req, res) => res.end('{"keys":[]}'));
  const { app } = await build(t, {
    areas,
    config: { adminToken: ADMIN, 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile },
  });
  await registerClient(app, { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: `${keys.origin}/jwks` });
  t.same(keys.requests, []);
  const plain = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: `http://localhost:${keys.port}/jwks`,
    },
  });
  t.equal(plain.json().reason, 'invalid_client_metadata', 'plain http stays refused even then');
});

t.test('a client whose stored jwks_uri is private is never fetched under the default configuration', async (t) => {
  const internal = await internalListener(t);
  const { app, services } = await build(t, { areas, config: { adminToken: ADMIN } });
  const client = await registerClient(app, {
    token_endpoint_auth_method: 'private_key_jwt',
    jwks: { keys: [await exportJWK((await generateKeyPair('ES256')).publicKey)] },
  });
  // Stored before the check existed, or while private targets were allowed.
  const stored = (await services.storage.clients.get(client.client_id))!;
  const { jwks: _jwks, ...metadata } = stored.metadata;
  await services.storage.clients.update(client.client_id, stored.revision, {
    type: stored.type,
    metadata: { ...metadata, jwks_uri: `https://127.0.0.1:${internal.port}/internal-admin?probe=1` },
    secretHash: null,
    secretIssuedAt: null,
    at: Date.now(),
  });
  const { privateKey } = await generateKeyPair('ES256');
  const res = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: FORM,
    payload: tokenRequest(client.client_id, await signAssertion(client.client_id, privateKey, 'k1', 'j1')),
  });
  t.equal(res.statusCode, 401);
  t.equal(res.json().reason, 'invalid_client');
  t.equal(internal.seen.connections, 0);
});

t.test(
  'fetches a registered jwks_uri through the guarded fetcher, caches it and reads it again for a new kid',
  async (t) => {
    const tls = makeTestCa(t);
    const first = await generateKeyPair('ES256');
    const second = await generateKeyPair('ES256');
    let published = [{ ...(await exportJWK(first.publicKey)), kid: 'k1', alg: 'ES256' }];
    const keys = await startHttpsServer(t, tls, (_req, res) => {
      res.setHeader('content-type', 'application/jwk-set+json');
      res.end(JSON.stringify({ keys: published }));
    });
    // The assertions are stamped by this clock too: a slow machine cannot put their iat ahead of it.
    const clock = manualClock();
    const { app } = await build(t, {
      areas,
      now: clock.now,
      config: { adminToken: ADMIN, 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile },
    });
    const client = await registerClient(app, {
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: `${keys.origin}/jwks`,
    });
    const send = async (key: CryptoKey, kid: string, jti: string) =>
      app.inject({
        method: 'POST',
        url: '/auth/token',
        headers: FORM,
        payload: tokenRequest(client.client_id, await signAssertion(client.client_id, key, kid, jti, clock.now())),
      });

    const one = await send(first.privateKey, 'k1', 'a1');
    t.equal(one.json().reason, 'invalid_grant', 'the client authenticated; only the made-up code is refused');
    const two = await send(first.privateKey, 'k1', 'a2');
    t.equal(two.json().reason, 'invalid_grant', two.body);
    t.same(keys.requests, ['GET /jwks'], 'the key set is cached');

    published = [...published, { ...(await exportJWK(second.publicKey)), kid: 'k2', alg: 'ES256' }];
    t.equal(
      (await send(second.privateKey, 'k2', 'a3')).json().reason,
      'invalid_client',
      'not fetched again within the cooldown',
    );
    clock.advance(31_000);
    t.equal(
      (await send(second.privateKey, 'k2', 'a4')).json().reason,
      'invalid_grant',
      'an unknown kid after the cooldown reads the set again',
    );
    t.equal(keys.requests.length, 2);

    const { privateKey: stranger } = await generateKeyPair('ES256');
    t.equal((await send(stranger, 'k1', 'a5')).json().reason, 'invalid_client', 'a wrong signature never verifies');
  },
);

t.test('a key set that cannot be fetched or read refuses the client', async (t) => {
  const tls = makeTestCa(t);
  let answer: [number, string] = [500, 'oops'];
  const keys = await startHttpsServer(t, tls, (_req, res) => res.writeHead(answer[0]).end(answer[1]));
  const { app } = await build(t, {
    areas,
    config: { adminToken: ADMIN, 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile },
  });
  const client = await registerClient(app, {
    token_endpoint_auth_method: 'private_key_jwt',
    jwks_uri: `${keys.origin}/jwks`,
  });
  const { privateKey } = await generateKeyPair('ES256');
  const send = async (jti: string) =>
    app.inject({
      method: 'POST',
      url: '/auth/token',
      headers: FORM,
      payload: tokenRequest(client.client_id, await signAssertion(client.client_id, privateKey, 'k1', jti)),
    });
  t.equal((await send('b1')).json().reason, 'invalid_client');
  answer = [200, 'not json'];
  t.equal((await send('b2')).json().reason, 'invalid_client');
  answer = [200, 'x'.repeat(70_000)];
  t.equal((await send('b3')).json().reason, 'invalid_client');
});

t.test('the cache of remote key sets is bounded and drops the least recently used set', async (t) => {
  const fetched: string[] = [];
  const clock = manualClock();
  const fetcher = {
    fetch: async (url: string | URL) => {
      fetched.push(String(url));
      return {
        url: String(url),
        status: 200,
        headers: {},
        address: '203.0.113.1',
        body: Buffer.from('{"keys":[]}'),
        redirects: [],
      };
    },
    check: async () => {
      throw new Error('unused');
    },
  };
  const sets = new RemoteKeySets({ fetcher, now: clock.now }, 2);
  await sets.get('https://a.example/jwks');
  await sets.get('https://b.example/jwks');
  await sets.get('https://a.example/jwks');
  await sets.get('https://c.example/jwks');
  t.equal(sets.size, 2);
  await sets.get('https://a.example/jwks');
  t.same(
    fetched,
    ['https://a.example/jwks', 'https://b.example/jwks', 'https://c.example/jwks'],
    'a was used recently, so b went',
  );
  await sets.get('https://b.example/jwks');
  t.equal(fetched.length, 4);
  clock.advance(600_001);
  await sets.get('https://b.example/jwks');
  t.equal(fetched.length, 5, 'an entry older than its maximum age is fetched again');
  await Promise.all([sets.get('https://d.example/jwks'), sets.get('https://d.example/jwks')]);
  t.equal(fetched.length, 6, 'concurrent reads share one fetch');
});
