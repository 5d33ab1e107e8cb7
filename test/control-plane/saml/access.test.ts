import t from 'tap';
import { create } from 'xmlbuilder2';
import { encodeRedirectMessage } from '#lib/saml/bindings.js';
import { generateSamlKey } from '#lib/saml/certificate.js';
import { BINDING, NS } from '#lib/saml/constants.js';
import { newSamlId } from '#lib/saml/response.js';
import { createOrg } from '../../../control-plane/src/orgs/membership.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { TEST_ISSUER } from '../../helpers/build.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['saml'] as const;

/**
 * Issue 34, "SAML service providers take the same restriction": a provider's `access.orgs`
 * (docs/saml.md#who-may-sign-in) admits only members of those orgs, in those roles. A non-member
 * sees the same page as an OIDC client's refusal; its one button posts the provider a signed
 * Responder/RequestDenied; IsPassive answers NoPassive; every refusal leaves a receipt.
 */
const ADMIN = 'saml-access-admin-token-0123456789abcdef0123';
const ENTITY = 'https://wiki.example/metadata';
const ACS = 'https://wiki.example/acs';

function authnRequest(extra: Record<string, string> = {}) {
  const root = create().ele(NS.protocol, 'samlp:AuthnRequest', {
    ID: newSamlId(),
    Version: '2.0',
    IssueInstant: new Date().toISOString(),
    Destination: `${TEST_ISSUER}/saml/sso`,
    AssertionConsumerServiceURL: ACS,
    ProtocolBinding: BINDING.post,
    ...extra,
  });
  root.ele(NS.assertion, 'saml:Issuer').txt(ENTITY);
  return root.end({ headless: true });
}

const spInitiated = (extra: Record<string, string> = {}) =>
  `/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(authnRequest(extra)))}`;

function formValue(body: string, name: string): string | undefined {
  return new RegExp(`name="${name}" value="([^"]*)"`)
    .exec(body)?.[1]
    ?.replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');
}

const samlResponseOf = (body: string) => {
  const value = formValue(body, 'SAMLResponse');
  return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
};

t.test("a SAML provider's access.orgs admits members only", async (t) => {
  const sp = await generateSamlKey({ commonName: 'SP', now: Date.now(), validDays: 30, modulusLength: 2048 });
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const { app, services } = built;
  const receipts = async (kind: string) => {
    const text = await services.metrics.getSingleMetricAsString('keyplane_receipts_total');
    return Number(new RegExp(`kind="${kind.replace('.', '\\.')}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  };
  const { browser: member, identityId: memberId } = await built.signIn({ username: 'alice' });
  const { browser: stranger } = await built.signIn({ username: 'mallory' });
  const { org } = await createOrg(services, memberId, { name: 'Acme Staff' });
  const settings = {
    entity_id: ENTITY,
    acs_urls: [ACS],
    certificate: sp.certificatePem,
    name: 'Staff Wiki',
    allow_idp_initiated: true,
    want_signed_requests: false,
  };

  await t.test('registration checks access and answers it with slugs lower-cased', async (t) => {
    for (const access of [{ orgs: [] }, { orgs: [{ slug: 'acme', roles: ['root'] }] }, { groups: ['x'] }, 'acme']) {
      const bad = await app.inject({
        method: 'POST',
        url: '/saml/providers',
        headers: { authorization: `Bearer ${ADMIN}` },
        payload: { ...settings, access },
      });
      t.equal(bad.statusCode, 400, JSON.stringify(access));
      t.equal(bad.json().reason, 'invalid_request');
    }
  });

  const registered = await app.inject({
    method: 'POST',
    url: '/saml/providers',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: { ...settings, access: { orgs: [{ slug: org.slug.toUpperCase() }] } },
  });
  t.equal(registered.statusCode, 201, registered.body);
  const provider = registered.json().provider;
  t.same(provider.access, { orgs: [{ slug: org.slug }] });
  const read = await app.inject({
    method: 'GET',
    url: `/saml/providers/${provider.id}`,
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  t.same(read.json().provider.access, { orgs: [{ slug: org.slug }] }, 'read back from the store');

  await t.test('a member gets the assertion, SP- and IdP-initiated', async (t) => {
    for (const url of [spInitiated(), `/saml/sso?sp=${provider.id}`]) {
      const page = await member.get(url);
      t.equal(page.statusCode, 200, url);
      const response = samlResponseOf(page.body)!;
      t.match(response, /status:Success/);
      t.match(response, new RegExp(`<saml:NameID[^>]*>${memberId}<`));
    }
  });

  await t.test('a stranger sees why, and the provider gets a signed RequestDenied with a receipt', async (t) => {
    const deniedBefore = await receipts('signin.access_denied');
    const issuedBefore = await receipts('saml.assertion_issued');
    const page = await stranger.get(spInitiated({ ID: '_req-stranger' }));
    t.equal(page.statusCode, 403);
    t.notMatch(page.body, /SAMLResponse/, 'nothing for the provider yet');
    t.match(page.body, /No access to Staff Wiki/);
    t.match(page.body, /data-field="account">mallory</, 'names the account');
    t.match(page.body, /https:\/\/wiki\.example/, 'and the app');
    t.match(page.body, new RegExp(`members of the org ${org.slug}`), 'and whom it admits');
    t.match(page.body, /action="\/saml\/sso\/approve" data-action="not-admitted"/);
    t.equal(await receipts('signin.access_denied'), deniedBefore + 1, 'a signin.access_denied receipt');
    const back = await stranger.post('/saml/sso/approve', {
      resume: formValue(page.body, 'resume')!,
      approval: formValue(page.body, 'approval')!,
      decision: 'not_admitted',
    });
    t.equal(back.statusCode, 200, back.body);
    t.match(back.body, new RegExp(`action="${ACS}"`), 'posted to the ACS URL');
    const response = samlResponseOf(back.body)!;
    t.match(response, /StatusCode Value="urn:oasis:names:tc:SAML:2\.0:status:Responder"/);
    t.match(response, /urn:oasis:names:tc:SAML:2\.0:status:RequestDenied/);
    t.match(response, /InResponseTo="_req-stranger"/);
    t.notMatch(response, /Assertion/);
    t.equal(await receipts('saml.assertion_issued'), issuedBefore, 'no assertion issued');
  });

  await t.test('the refusal token never approves, whatever decision comes with it', async (t) => {
    const page = await stranger.get(`/saml/sso?sp=${provider.id}`);
    const allowed = await stranger.post('/saml/sso/approve', {
      resume: formValue(page.body, 'resume')!,
      approval: formValue(page.body, 'approval')!,
      decision: 'allow',
    });
    t.equal(allowed.statusCode, 200);
    t.match(samlResponseOf(allowed.body)!, /status:RequestDenied/);
    t.notMatch(samlResponseOf(allowed.body)!, /Assertion/);
  });

  await t.test('IsPassive: a signed NoPassive, no page', async (t) => {
    const before = await receipts('signin.access_denied');
    const page = await stranger.get(spInitiated({ IsPassive: 'true' }));
    t.equal(page.statusCode, 200);
    const response = samlResponseOf(page.body)!;
    t.match(response, /status:Responder/);
    t.match(response, /status:NoPassive/);
    t.notMatch(response, /Assertion/);
    t.equal(await receipts('signin.access_denied'), before + 1, 'still receipted');
  });

  await t.test('roles: only the listed roles; a removed member is refused at the next sign-in', async (t) => {
    const { browser: bob, identityId: bobId } = await built.signIn({ username: 'bob' });
    await services.storage.orgs.addMember(org.orgId, { identityId: bobId, role: 'member', addedAt: Date.now() });
    t.match(samlResponseOf((await bob.get(`/saml/sso?sp=${provider.id}`)).body)!, /status:Success/, 'a member');
    const updated = await app.inject({
      method: 'PUT',
      url: `/saml/providers/${provider.id}`,
      headers: { authorization: `Bearer ${ADMIN}` },
      payload: { ...settings, access: { orgs: [{ slug: org.slug, roles: ['admin', 'owner'] }] } },
    });
    t.equal(updated.statusCode, 200, updated.body);
    t.same(updated.json().provider.access, { orgs: [{ slug: org.slug, roles: ['admin', 'owner'] }] });
    const refused = await bob.get(`/saml/sso?sp=${provider.id}`);
    t.equal(refused.statusCode, 403, 'a plain member is not an admin');
    t.match(refused.body, new RegExp(`admins or owners of the org ${org.slug}`));
    t.match(samlResponseOf((await member.get(`/saml/sso?sp=${provider.id}`)).body)!, /status:Success/, 'the owner');
    await services.storage.orgs.setRole(org.orgId, bobId, 'admin');
    t.match(samlResponseOf((await bob.get(`/saml/sso?sp=${provider.id}`)).body)!, /status:Success/, 'promoted');
    await services.storage.orgs.removeMember(org.orgId, bobId);
    t.equal((await bob.get(`/saml/sso?sp=${provider.id}`)).statusCode, 403, 'removed');
  });

  await t.test('without access.orgs any account gets in, as before', async (t) => {
    const cleared = await app.inject({
      method: 'PUT',
      url: `/saml/providers/${provider.id}`,
      headers: { authorization: `Bearer ${ADMIN}` },
      payload: settings,
    });
    t.equal(cleared.statusCode, 200, cleared.body);
    t.notOk('access' in cleared.json().provider);
    t.match(samlResponseOf((await stranger.get(`/saml/sso?sp=${provider.id}`)).body)!, /status:Success/);
  });
  await t.test('the /apps/saml form sets access.orgs and the list says who may sign in', async (t) => {
    const { browser: founder } = await built.signIn({ username: 'founderop', assurance: 'sensitive', founder: true });
    const form = (extra: Record<string, string>) =>
      new URLSearchParams({
        org: '',
        entity_id: 'https://tool.example/sp',
        acs_urls: 'https://tool.example/acs',
        certificate: sp.certificatePem,
        name_id_format: 'persistent',
        want_signed_requests: 'true',
        ...extra,
      }).toString();
    const urlencoded = { 'content-type': 'application/x-www-form-urlencoded' };
    const bad = await founder.post('/apps/saml/register', form({ access_orgs: `${org.slug}:root` }), urlencoded);
    t.match(bad.body, /roles must list owner, admin and\/or member/, 'a bad role is refused on the page');
    const registered = await founder.post(
      '/apps/saml/register',
      form({ access_orgs: ` ${org.slug}:admin+owner , Ops ` }),
      urlencoded,
    );
    t.equal(registered.statusCode, 200, registered.body.slice(0, 300));
    const stored = await services.storage.saml.providerByEntityId('https://tool.example/sp');
    t.same(stored?.accessOrgs, [{ slug: org.slug, roles: ['admin', 'owner'] }, { slug: 'ops' }]);
    const list = await founder.get('/apps/saml');
    t.match(list.body, new RegExp(`admins or owners of the org ${org.slug} or members of the org ops`));
    const edit = await founder.get(`/apps/saml/${stored!.id}/edit`);
    t.match(
      edit.body,
      new RegExp(`name="access_orgs"[^>]*value="${org.slug}:admin\\+owner, ops"`),
      'the edit form is filled',
    );
    const cleared = await founder.post(
      `/apps/saml/${stored!.id}/update`,
      form({ revision: '1', access_orgs: '' }),
      urlencoded,
    );
    t.equal(cleared.statusCode, 200, cleared.body.slice(0, 300));
    t.equal((await services.storage.saml.provider(stored!.id))?.accessOrgs, null, 'emptied: any account');
  });
});
