import t, { type Test } from 'tap';
import { generateSamlKey } from '#lib/saml/certificate.js';
import { buildIdpMetadata } from '#lib/saml/metadata.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { seedProvedMailDomain } from '../../helpers/mail-domains.js';
import { ADMIN } from '../../helpers/oidc.js';
import { manualClock, TEST_ISSUER } from '../../helpers/build.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';
import { samlAuthnRedirect, samlSettings } from '../../../control-plane/src/federation/saml-upstream.js';

/**
 * Adding, reading and changing SAML connections (docs/federation.md#adding-a-saml-connection): the
 * IdP's metadata as XML or from an https URL (read again after a day), what the owner gets back to
 * give the IdP, and what is refused.
 */
const admin = { authorization: `Bearer ${ADMIN}` };
const NOW = Date.parse('2026-12-07T10:00:00Z');
const keys = Promise.all([
  generateSamlKey({ commonName: 'IdP', now: NOW, validDays: 365, modulusLength: 2048 }),
  generateSamlKey({ commonName: 'IdP next', now: NOW, validDays: 365, modulusLength: 2048 }),
]);
const metadataWith = (certificatePem: string) =>
  buildIdpMetadata({
    entityId: 'https://idp.acme.example/metadata',
    ssoUrl: 'https://idp.acme.example/sso',
    sloUrl: 'https://idp.acme.example/slo',
    certificatesPem: [certificatePem],
  });

async function setUp(t: Test) {
  const tls = makeTestCa(t);
  const clock = manualClock(NOW);
  const built = await buildSignedIn(t, {
    config: { adminToken: ADMIN, 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile },
    areas: ['orgs', 'federation'],
    now: clock.now,
  });
  const owner = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  t.equal((await owner.browser.post('/auth/orgs/create', { name: 'Acme' })).statusCode, 200);
  const org = (await built.services.storage.orgs.getBySlug('acme'))!;
  await seedProvedMailDomain(built.services.storage, org.orgId, 'acme.example', NOW);
  const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: Record<string, unknown>) =>
    built.app.inject({ method, url, headers: admin, ...(payload ? { payload } : {}) });
  return { ...built, owner, api, tls, clock };
}

t.test('an owner adds a SAML connection from the IdP metadata and gets what to give the IdP', async (t) => {
  const [idp] = await keys;
  const { owner } = await setUp(t);
  const created = await owner.browser.post('/org/acme/connections', {
    type: 'saml',
    name: 'Acme SAML',
    saml: { metadata_xml: metadataWith(idp.certificatePem) },
    domains: ['acme.example'],
    jit: { role: 'member' },
  });
  t.equal(created.statusCode, 201, created.body);
  const body = created.json();
  const sp = `${TEST_ISSUER}/federation/${body.connectionId}/saml`;
  t.match(body, {
    ok: true,
    connectionId: /^con_/,
    sp_entity_id: `${sp}/metadata`,
    acs_url: `${sp}/acs`,
    sp_metadata_url: `${sp}/metadata`,
    redirect_uri: `${sp}/acs`,
  });
  const shown = await owner.browser.get(`/org/acme/connections/${body.connectionId}`);
  t.match(shown.json(), {
    type: 'saml',
    saml: {
      idp_entity_id: 'https://idp.acme.example/metadata',
      sso_url: 'https://idp.acme.example/sso',
      slo_url: 'https://idp.acme.example/slo',
      allow_idp_initiated: false,
    },
    domains: ['acme.example'],
  });
  const metadata = await owner.browser.get(`/federation/${body.connectionId}/saml/metadata`);
  t.equal(metadata.statusCode, 200);
  t.match(metadata.headers['content-type'], /^application\/samlmetadata\+xml/);
  t.match(metadata.body, `entityID="${sp}/metadata"`);
  t.match(metadata.body, `Location="${sp}/acs"`);
  t.match(metadata.body, `Location="${sp}/slo"`);
  t.match(metadata.body, /<ds:X509Certificate>/, "the certificate Keyplane's AuthnRequests are signed with");

  const changed = await owner.browser.request('PUT', `/org/acme/connections/${body.connectionId}`, {
    name: 'Acme SAML 2',
    saml: { allow_idp_initiated: true },
  });
  t.equal(changed.statusCode, 200, changed.body);
  t.match(changed.json(), { name: 'Acme SAML 2', saml: { allow_idp_initiated: true, sso_url: /sso$/ } });
  t.equal((await owner.browser.get('/federation/con_nothing/saml/metadata')).statusCode, 404);
});

t.test('refuses metadata that is not an IdP, two sources, a plain-http URL, and a change of type', async (t) => {
  const [idp] = await keys;
  const { api } = await setUp(t);
  const add = (saml: Record<string, unknown>) =>
    api('POST', '/admin/connections', { type: 'saml', name: 'Partner', saml });
  for (const [saml, message] of [
    [{}, /needs saml/],
    [{ metadata_xml: '<not-metadata/>' }, /EntityDescriptor/],
    [{ metadata_xml: '<!DOCTYPE x><x/>' }, /DTD/],
    [{ metadata_xml: metadataWith(idp.certificatePem).replaceAll('IDPSSODescriptor', 'SPSSODescriptor') }, /IDPSSO/],
    [{ metadata_xml: metadataWith(idp.certificatePem), metadata_url: 'https://idp.example/md' }, /not both/],
    [{ metadata_url: 'http://idp.example/md' }, /https URL/],
  ] as const) {
    const res = await add(saml);
    t.equal(res.statusCode, 400, JSON.stringify(saml).slice(0, 60));
    t.match(res.json(), { ok: false, reason: 'invalid_request', message });
  }
  const created = (await add({ metadata_xml: metadataWith(idp.certificatePem) })).json();
  const retyped = await api('PUT', `/admin/connections/${created.connectionId}`, { type: 'oidc' });
  t.match(retyped.json(), { reason: 'invalid_request', message: /type of a connection is fixed/ });
  const withOidc = await api('PUT', `/admin/connections/${created.connectionId}`, {
    oidc: { client_id: 'x' },
  });
  t.match(withOidc.json(), { reason: 'invalid_request', message: /takes saml, not oidc/ });
});

t.test('metadata from a URL is read through the guarded fetcher, and again after a day', async (t) => {
  const [idp, next] = await keys;
  const { api, tls, clock, services } = await setUp(t);
  let served = metadataWith(idp.certificatePem);
  const server = await startHttpsServer(t, tls, (_, res) => {
    res.setHeader('content-type', 'application/samlmetadata+xml');
    res.end(served);
  });
  const created = await api('POST', '/admin/connections', {
    type: 'saml',
    name: 'Partner',
    saml: { metadata_url: `${server.origin}/metadata` },
  });
  t.equal(created.statusCode, 201, created.body);
  const id = created.json().connectionId as string;
  t.match(created.json().connection, { saml: { metadata_url: `${server.origin}/metadata` } });
  const body = (pem: string) => pem.replace(/-----[^-]+-----|\s+/g, '');
  const certificates = async () =>
    samlSettings((await services.storage.connections.get(id))!).certificatesPem.map(body);
  t.same(await certificates(), [body(idp.certificatePem)]);

  // The IdP rolls its certificate; within the day the pinned one stays, after it the new one is read.
  served = metadataWith(next.certificatePem);
  const start = async () =>
    samlAuthnRedirect(services, (await services.storage.connections.get(id))!, {
      binding: 'b',
      returnTo: '/account',
    });
  await start();
  t.same(await certificates(), [body(idp.certificatePem)], 'not yet');
  clock.advance(25 * 3_600_000);
  await start();
  t.same(await certificates(), [body(next.certificatePem)], 'read again');
  t.equal(server.requests.length, 2);

  // An IdP that does not answer: the sign-in starts with the metadata the connection has.
  served = '<broken';
  clock.advance(25 * 3_600_000);
  t.match(new URL(await start()).origin, 'https://idp.acme.example');
  t.same(await certificates(), [body(next.certificatePem)], 'kept');
});
