import t from 'tap';
import { ClientOrigins } from '../../../control-plane/src/clients/client-origins.js';
import { ADMIN, registerClient } from '../../helpers/oidc.js';
import { build } from '../../helpers/build.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['oidc', 'clients'] as const;

function fakeClients(uris: string[], inPlace: string[] = []) {
  const reads = { all: 0, inPlace: 0 };
  let failing = false;
  return {
    reads,
    fail: (on: boolean) => void (failing = on),
    store: {
      allRedirectUris: async () => {
        reads.all++;
        if (failing) throw new Error('database unavailable');
        return [...uris];
      },
    },
    publishedInPlace: async () => {
      reads.inPlace++;
      return [...inPlace];
    },
  };
}

t.test('origins are read once, kept until forgotten or too old, and a failed read is not kept', async (t) => {
  const uris = ['https://app.example.com/cb', 'https://app.example.com:8443/cb', 'not a url'];
  const clients = fakeClients(uris, ['https://spa.example.com']);
  let now = 0;
  const origins = new ClientOrigins(clients.store, clients.publishedInPlace, 5_000, () => now);
  t.equal(await origins.registered('https://app.example.com'), true);
  t.equal(await origins.registered('https://app.example.com:8443'), true);
  t.equal(await origins.registered('https://evil.example.com'), false);
  t.equal(clients.reads.all, 1, 'one read for every question');
  t.same(await origins.inPlace(), ['https://spa.example.com']);

  uris.push('https://new.example.com/cb');
  now = 4_999;
  t.equal(await origins.registered('https://new.example.com'), false, 'kept within the age limit');
  now = 5_000;
  t.equal(await origins.registered('https://new.example.com'), true, 'read again once too old');
  t.equal(clients.reads.all, 2);

  uris.splice(0, uris.length);
  origins.forget();
  t.equal(await origins.registered('https://app.example.com'), false, 'a forgotten set is read again at once');
  t.equal(clients.reads.inPlace, 1);
  t.same(await origins.inPlace(), ['https://spa.example.com']);
  t.equal(clients.reads.inPlace, 2, 'forget drops both');

  origins.forget();
  clients.fail(true);
  await t.rejects(origins.registered('https://app.example.com'), /unavailable/);
  clients.fail(false);
  t.equal(await origins.registered('https://app.example.com'), false, 'the failure was not kept');
});

t.test('a client registered or deleted here changes the CORS answer at once', async (t) => {
  const { app } = await build(t, { areas, config: { adminToken: ADMIN } });
  const preflight = (origin: string) =>
    app.inject({
      method: 'OPTIONS',
      url: '/auth/token',
      headers: { origin, 'access-control-request-method': 'POST' },
    });
  t.notOk((await preflight('https://spa.example.net')).headers['access-control-allow-origin'], 'unknown yet');
  const client = await registerClient(app, {
    token_endpoint_auth_method: 'none',
    redirect_uris: ['https://spa.example.net/callback'],
  });
  t.equal(
    (await preflight('https://spa.example.net')).headers['access-control-allow-origin'],
    'https://spa.example.net',
  );
  const removed = await app.inject({
    method: 'DELETE',
    url: new URL((client as unknown as { registration_client_uri: string }).registration_client_uri).pathname,
    headers: {
      authorization: `Bearer ${(client as unknown as { registration_access_token: string }).registration_access_token}`,
    },
  });
  t.equal(removed.statusCode, 200, removed.body);
  t.notOk((await preflight('https://spa.example.net')).headers['access-control-allow-origin'], 'gone with its client');
});
