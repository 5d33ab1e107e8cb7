import t from 'tap';
import { create } from 'xmlbuilder2';
import { encodeRedirectMessage } from '#lib/saml/bindings.js';
import { generateSamlKey } from '#lib/saml/certificate.js';
import { BINDING, NS } from '#lib/saml/constants.js';
import { newSamlId } from '#lib/saml/response.js';
import { Browser, buildSignedIn } from '../../helpers/signed-in.js';
import { TEST_ISSUER } from '../../helpers/build.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['orgs', 'saml', 'account'] as const;

/**
 * Finding 1 of the second security review (issue 29): a SAML service provider an org registered
 * gets no assertion for an account that has not approved it. The approval page names the provider
 * and its attributes and nothing is posted until the person approves; IsPassive answers a signed
 * NoPassive; the approval is listed on the account page and revocable; an installation-owned
 * provider (the operator's) stays first-party.
 */
const ADMIN = 'saml-consent-admin-token-0123456789abcdef01';
const ENTITY = 'https://evil-sp.example/metadata';
const ACS = 'https://evil-sp.example/acs';

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

t.test('an org-owned SAML provider gets nothing until the account approves it', async (t) => {
  const sp = await generateSamlKey({ commonName: 'SP', now: Date.now(), validDays: 30, modulusLength: 2048 });
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const { app, services } = built;
  const issued = async () => {
    const text = await services.metrics.getSingleMetricAsString('keyplane_receipts_total');
    return Number(/kind="saml\.assertion_issued"\} (\d+)/.exec(text)?.[1] ?? 0);
  };
  const { browser: owner } = await built.signIn({ username: 'mallory', assurance: 'sensitive' });
  const org = await owner.post('/auth/orgs/create', { name: 'Mallory Inc' });
  t.equal(org.statusCode, 200, org.body);
  const slug = org.json().org?.slug ?? org.json().slug;
  // The shape of the attack: IdP-initiated allowed, unsigned requests accepted, identity attributes.
  const registered = await app.inject({
    method: 'POST',
    url: '/saml/providers',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: {
      entity_id: ENTITY,
      acs_urls: [ACS],
      certificate: sp.certificatePem,
      name: 'Harmless Wiki',
      allow_idp_initiated: true,
      want_signed_requests: false,
      attributes: { sub: 'sub', username: 'username', email: 'email', amr: 'amr' },
      org: slug,
    },
  });
  t.equal(registered.statusCode, 201, registered.body);
  const provider = registered.json().provider;
  const { browser: victim, identityId } = await built.signIn({ username: 'victim' });

  await t.test('IdP-initiated and unsigned SP-initiated: the approval page, no Response', async (t) => {
    const before = await issued();
    for (const url of [
      `/saml/sso?sp=${provider.id}`,
      `/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(authnRequest()))}`,
    ]) {
      const page = await victim.get(url);
      t.equal(page.statusCode, 200, url);
      t.notMatch(page.body, /SAMLResponse/, `${url}: nothing for the provider`);
      t.notMatch(page.body, new RegExp(`action="${ACS}"`), 'no form to the ACS');
      t.match(page.body, /Continue to Harmless Wiki\?/, 'names the provider');
      t.match(page.body, /https:\/\/evil-sp\.example/, 'and where it is');
      t.match(page.body, /Know who you are \(a stable account id\) \(sent as NameID, sub\)/);
      t.match(page.body, /See your username \(sent as username\)/);
      t.match(page.body, /See your verified email address \(sent as email\)/);
      t.match(page.body, /action="\/saml\/sso\/approve" data-action="continue"/);
      t.match(page.headers['referrer-policy'], 'same-origin', 'the form carries our Origin back');
    }
    const german = await victim.get(`/saml/sso?sp=${provider.id}`, { 'accept-language': 'de' });
    t.match(
      german.body,
      'Wissen, wer Sie sind (eine feste Konto-ID) (gesendet als NameID, sub)',
      'in the reader’s language',
    );
    const arabic = await victim.get(`/saml/sso?sp=${provider.id}`, { 'accept-language': 'ar' });
    t.match(arabic.body, 'رؤية اسم المستخدم الخاص بك (يُرسَل باسم username)');
    t.equal(await issued(), before, 'no assertion issued');
  });

  await t.test('IsPassive: a signed NoPassive answer and no assertion', async (t) => {
    const page = await victim.get(
      `/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(authnRequest({ IsPassive: 'true' })))}`,
    );
    t.equal(page.statusCode, 200);
    const response = samlResponseOf(page.body)!;
    t.match(response, /status:Responder/);
    t.match(response, /status:NoPassive/);
    t.notMatch(response, /Assertion/);
  });

  await t.test('the approval is one use, for this session only; deny answers RequestDenied', async (t) => {
    const page = await victim.get(`/saml/sso?sp=${provider.id}`);
    const hidden = { resume: formValue(page.body, 'resume')!, approval: formValue(page.body, 'approval')! };
    const { browser: other } = await built.signIn({ username: 'bystander' });
    const stolen = await other.post('/saml/sso/approve', { ...hidden, decision: 'allow' });
    t.equal(stolen.statusCode, 400);
    t.notMatch(stolen.body, /SAMLResponse/, 'another session cannot use the approval');
    const again = await victim.get(`/saml/sso?sp=${provider.id}`);
    const denied = await victim.post('/saml/sso/approve', {
      resume: formValue(again.body, 'resume')!,
      approval: formValue(again.body, 'approval')!,
      decision: 'deny',
    });
    t.equal(denied.statusCode, 200);
    const response = samlResponseOf(denied.body)!;
    t.match(response, /status:RequestDenied/);
    t.notMatch(response, /Assertion/);
    t.equal((await services.storage.oidc.approval(identityId, provider.id)) === null, true, 'nothing approved');
  });

  await t.test('approving posts the assertion, and later sign-ins do not ask again', async (t) => {
    const before = await issued();
    const page = await victim.get(`/saml/sso?sp=${provider.id}&RelayState=r1`);
    const forged = await victim.post(
      '/saml/sso/approve',
      { resume: formValue(page.body, 'resume')!, approval: formValue(page.body, 'approval')!, decision: 'allow' },
      { origin: 'https://evil-sp.example' },
    );
    t.equal(forged.statusCode, 403, 'a cross-site approval is refused');
    const approved = await victim.post('/saml/sso/approve', {
      resume: formValue(page.body, 'resume')!,
      approval: formValue(page.body, 'approval')!,
      decision: 'allow',
    });
    t.equal(approved.statusCode, 200, approved.body);
    t.match(approved.body, new RegExp(`action="${ACS}"`));
    t.match(samlResponseOf(approved.body)!, new RegExp(`<saml:NameID[^>]*>${identityId}<`));
    t.equal(formValue(approved.body, 'RelayState'), 'r1');
    const next = await victim.get(`/saml/sso?sp=${provider.id}`);
    t.match(samlResponseOf(next.body)!, /Assertion/, 'remembered');
    t.equal(await issued(), before + 2);
  });

  await t.test('an attribute the account never approved asks again', async (t) => {
    await victim.post('/account/approvals/revoke', { party: provider.id });
    const open = await victim.get(`/saml/sso?sp=${provider.id}`);
    const updated = await app.inject({
      method: 'PUT',
      url: `/saml/providers/${provider.id}`,
      headers: { authorization: `Bearer ${ADMIN}` },
      payload: {
        entity_id: ENTITY,
        acs_urls: [ACS],
        certificate: sp.certificatePem,
        name: 'Harmless Wiki',
        allow_idp_initiated: true,
        want_signed_requests: false,
        attributes: { sub: 'sub', username: 'username', email: 'email', amr: 'amr', name: 'display_name' },
      },
    });
    t.equal(updated.statusCode, 200, updated.body);
    const stale = await victim.post('/saml/sso/approve', {
      resume: formValue(open.body, 'resume')!,
      approval: formValue(open.body, 'approval')!,
      decision: 'allow',
    });
    t.equal(stale.statusCode, 400, 'a page open while the provider added an attribute approves nothing');
    t.notMatch(stale.body, /SAMLResponse/);
    const page = await victim.get(`/saml/sso?sp=${provider.id}`);
    t.notMatch(page.body, /SAMLResponse/);
    t.match(page.body, /See your display name \(sent as name\)/);
    const approved = await victim.post('/saml/sso/approve', {
      resume: formValue(page.body, 'resume')!,
      approval: formValue(page.body, 'approval')!,
      decision: 'allow',
    });
    t.match(samlResponseOf(approved.body)!, /Assertion/);
  });

  await t.test('the account page lists the approval; revoking it asks again', async (t) => {
    const account = await victim.get('/account', { accept: 'application/json' });
    t.match(account.json().approvals, [{ party: provider.id, kind: 'saml', name: 'Harmless Wiki' }]);
    const html = await victim.get('/account', { accept: 'text/html' });
    t.match(html.body, new RegExp(`data-party="${provider.id}"`));
    t.match(html.body, /action="\/account\/approvals\/revoke"/);
    const revoked = await victim.post('/account/approvals/revoke', { party: provider.id });
    t.equal(revoked.statusCode, 200, revoked.body);
    t.match(revoked.json().receipt, /^[0-9a-f]{64}$/);
    t.same((await victim.get('/account', { accept: 'application/json' })).json().approvals, []);
    t.equal((await victim.post('/account/approvals/revoke', { party: provider.id })).statusCode, 404);
    const page = await victim.get(`/saml/sso?sp=${provider.id}`);
    t.notMatch(page.body, /SAMLResponse/, 'asks again');
  });

  await t.test('an installation-owned provider is first-party: no page', async (t) => {
    const ops = await app.inject({
      method: 'POST',
      url: '/saml/providers',
      headers: { authorization: `Bearer ${ADMIN}` },
      payload: {
        entity_id: 'https://ops.example/sp',
        acs_urls: ['https://ops.example/acs'],
        certificate: sp.certificatePem,
        allow_idp_initiated: true,
      },
    });
    t.equal(ops.statusCode, 201, ops.body);
    const page = await victim.get(`/saml/sso?sp=${ops.json().provider.id}`);
    t.match(samlResponseOf(page.body)!, /Assertion/);
    const anonymous = await new Browser(app).get(`/saml/sso?sp=${ops.json().provider.id}`);
    t.equal(anonymous.statusCode, 303, 'without a session: sign in first');
  });
});
