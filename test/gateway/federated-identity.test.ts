import t from 'tap';
import { decodeJwt } from 'jose';
import { createConnection } from '../../control-plane/src/federation/connections.js';
import { seedProvedMailDomain } from '../helpers/mail-domains.js';
import { startAtKeyplane, startUpstreamOidc } from '../helpers/upstream-oidc.js';
import { get, HTML, Jar, signIn, world } from './real-world.js';

/**
 * A session signed in through a connection (docs/federation.md#tokens), through the gateway: the
 * app behind it gets `idp` and `idp_name` in the assertion and `X-Auth-Idp`; a passkey session
 * gets neither. node-oidc-provider is the connection's upstream.
 */
t.test("the gateway's assertion says which connection a federated sign-in came through", async (t) => {
  const upstream = await startUpstreamOidc(t);
  const w = await world(t, undefined, { cp: { fetch: { allowPrivateTargets: true, caFile: upstream.tls.caFile } } });
  const { services } = w.cp;
  const now = Date.now();
  await services.storage.orgs.create(
    { orgId: 'org_acme', slug: 'acme', name: 'Acme', website: null, createdAt: now },
    w.user.identityId,
  );
  await seedProvedMailDomain(services.storage, 'org_acme', 'acme.example', now);
  const { connection } = await createConnection(
    services,
    { orgId: 'org_acme', actor: { type: 'person', id: w.user.identityId } },
    {
      type: 'oidc',
      name: 'Acme SSO',
      oidc: { issuer: upstream.issuer, client_id: 'keyplane', client_secret: 'upstream-secret-0123456789' },
      domains: ['acme.example'],
      jit: { role: 'member' },
    },
  );
  upstream.addClient({
    client_id: 'keyplane',
    client_secret: 'upstream-secret-0123456789',
    redirect_uris: [`${w.cp.url}/federation/${connection.connectionId}/callback`],
    token_endpoint_auth_method: 'client_secret_basic',
  });

  // Ada signs in at Keyplane through the connection (the sign-in page's discovery, the upstream's pages).
  const { cookie, authorizationUrl } = await startAtKeyplane(w.cp.url, 'ada@acme.example');
  const landed = await get(await upstream.browser().signIn(authorizationUrl, 'ada@acme.example'), { cookie });
  t.equal(landed.status, 303, 'signed in at Keyplane');
  const jar = new Jar();
  jar.absorb(landed.setCookie);

  const ada = await signIn({ ...w, user: { ...w.user, jar } }, '/app');
  t.equal((await get(`${w.gw.url}/app`, { ...HTML, cookie: ada.jar.header() })).status, 200);
  const seen = w.upstream.last().headers;
  t.equal(seen['x-auth-idp'], connection.connectionId, 'X-Auth-Idp: the connection id');
  t.match(decodeJwt(seen['x-auth-assertion'] as string), {
    idp: connection.connectionId,
    idp_name: 'Acme SSO',
    assurance: 'email',
  });

  // A passkey session says nothing of a connection, and a client's own X-Auth-Idp never gets through.
  const own = await signIn(w, '/app');
  await get(`${w.gw.url}/app`, { ...HTML, cookie: own.jar.header(), 'x-auth-idp': 'con_forged' });
  const plain = w.upstream.last().headers;
  t.equal(plain['x-auth-idp'], undefined);
  t.notOk('idp' in decodeJwt(plain['x-auth-assertion'] as string));
});
