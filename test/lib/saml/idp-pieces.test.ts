import t from 'tap';
import { create } from 'xmlbuilder2';
import { generateSamlKey } from '#lib/saml/certificate.js';
import { NAMEID_FORMAT, NS } from '#lib/saml/constants.js';
import { decideSso } from '#lib/saml/decide.js';
import { parseLogoutRequest } from '#lib/saml/logout-request.js';
import { checkCertificate, checkEndpointUrl, checkProviderSettings, DEFAULT_ATTRIBUTES } from '#lib/saml/provider.js';

/** The IdP's pure pieces: provider settings, the SSO decision and LogoutRequest parsing. */
const reasonOf = (fn: () => unknown) => {
  try {
    fn();
    return undefined;
  } catch (error) {
    return (error as { reason?: string }).reason;
  }
};

t.test('provider settings: exact endpoints, a pinned RSA certificate, formats and attributes', async (t) => {
  const sp = await generateSamlKey({ commonName: 'SP', now: Date.now(), validDays: 2, modulusLength: 2048 });
  const base = {
    entity_id: 'https://sp.example/md',
    acs_urls: ['https://sp.example/acs'],
    certificate: sp.certificatePem,
  };
  const settings = checkProviderSettings(base);
  t.same(settings.attributes, DEFAULT_ATTRIBUTES);
  t.equal(settings.nameIdFormat, NAMEID_FORMAT.persistent);
  t.equal(settings.wantSignedRequests, true);
  t.equal(settings.allowIdpInitiated, false);
  t.equal(checkProviderSettings({ ...base, name_id_format: 'email' }).nameIdFormat, NAMEID_FORMAT.email);
  const bare = sp.certificatePem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  t.equal(checkCertificate(bare), checkCertificate(sp.certificatePem), 'a bare base64 body is the same certificate');
  t.equal(
    checkEndpointUrl('http://localhost:8080/acs', 'x'),
    'http://localhost:8080/acs',
    'http on loopback for development',
  );
  for (const [label, input] of [
    ['no entity_id', { ...base, entity_id: '' }],
    ['spaces in entity_id', { ...base, entity_id: 'a b' }],
    ['no ACS', { ...base, acs_urls: [] }],
    ['http ACS', { ...base, acs_urls: ['http://sp.example/acs'] }],
    ['fragment', { ...base, acs_urls: ['https://sp.example/acs#x'] }],
    ['duplicate ACS', { ...base, acs_urls: ['https://sp.example/acs', 'https://sp.example/acs'] }],
    ['not a URL', { ...base, acs_urls: ['acs'] }],
    ['garbage certificate', { ...base, certificate: 'not a certificate' }],
    ['base64 that is no certificate', { ...base, certificate: 'AAAA' }],
    ['unknown format', { ...base, name_id_format: 'transient' }],
    ['unknown attribute source', { ...base, attributes: { a: 'password' } }],
    ['attributes not an object', { ...base, attributes: ['a'] }],
    ['flag not boolean', { ...base, allow_idp_initiated: 'yes' }],
    ['empty name', { ...base, name: ' ' }],
  ] as const) {
    t.equal(
      reasonOf(() => checkProviderSettings(input as Record<string, unknown>)),
      'invalid_request',
      label,
    );
  }
});

t.test(
  'SSO decision: sign-in, ForceAuthn and context through step-up, IsPassive and unmeetable contexts',
  async (t) => {
    const at = 1000;
    const needs = { forceAuthn: false, isPassive: false, receivedAt: at };
    t.same(decideSso(needs, undefined), { action: 'login' });
    t.same(decideSso({ ...needs, isPassive: true }, undefined), { action: 'error', status: 'NoPassive' });
    t.same(decideSso(needs, { assurance: 'passkey', authTime: 0 }), { action: 'issue' });
    t.same(decideSso({ ...needs, forceAuthn: true }, { assurance: 'passkey', authTime: 0 }), { action: 'step_up' });
    t.same(
      decideSso({ ...needs, forceAuthn: true }, { assurance: 'passkey', authTime: at }),
      { action: 'issue' },
      'authenticated after the request',
    );
    t.same(decideSso({ ...needs, requiredAssurance: 'sensitive' }, { assurance: 'passkey', authTime: at }), {
      action: 'step_up',
    });
    t.same(
      decideSso({ ...needs, requiredAssurance: 'sensitive', isPassive: true }, { assurance: 'passkey', authTime: at }),
      { action: 'error', status: 'NoPassive' },
    );
    t.same(decideSso({ ...needs, requiredAssurance: null }, { assurance: 'sensitive', authTime: at }), {
      action: 'error',
      status: 'NoAuthnContext',
    });
  },
);

t.test('LogoutRequest parsing', async (t) => {
  const xml = (attributes: Record<string, string> = {}, nameId: string | null = 'usr_1') => {
    const root = create().ele(NS.protocol, 'samlp:LogoutRequest', {
      ID: '_abc',
      Version: '2.0',
      IssueInstant: '2026-11-23T10:00:00Z',
      Destination: 'https://id/saml/slo',
      ...attributes,
    });
    root.ele(NS.assertion, 'saml:Issuer').txt('https://sp');
    if (nameId !== null) root.ele(NS.assertion, 'saml:NameID').txt(nameId);
    root.ele(NS.protocol, 'samlp:SessionIndex').txt('_s1');
    return root.end({ headless: true });
  };
  t.same(parseLogoutRequest(xml()), {
    id: '_abc',
    issuer: 'https://sp',
    issueInstant: Date.parse('2026-11-23T10:00:00Z'),
    nameId: 'usr_1',
    sessionIndexes: ['_s1'],
    destination: 'https://id/saml/slo',
  });
  t.equal(
    reasonOf(() => parseLogoutRequest(xml({}, null))),
    'saml_request_invalid',
    'no NameID',
  );
  t.equal(
    reasonOf(() => parseLogoutRequest(xml({ Version: '1.1' }))),
    'saml_request_invalid',
  );
  t.equal(
    reasonOf(() => parseLogoutRequest(xml({ ID: '1bad' }))),
    'saml_request_invalid',
  );
  t.equal(
    reasonOf(() => parseLogoutRequest(xml({ IssueInstant: 'soon' }))),
    'saml_request_invalid',
  );
  t.equal(
    reasonOf(() => parseLogoutRequest('<!DOCTYPE x><x/>')),
    'saml_request_invalid',
  );
  t.equal(
    reasonOf(() => parseLogoutRequest(`<samlp:AuthnRequest xmlns:samlp="${NS.protocol}"/>`)),
    'saml_request_invalid',
    'not a LogoutRequest',
  );
});
