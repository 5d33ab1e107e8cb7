import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { create } from 'xmlbuilder2';
import { SignedXml } from 'xml-crypto';
import { checkAuthnRequest, parseAuthnRequest, type RegisteredProvider } from '#lib/saml/authn-request.js';
import {
  decodeRedirectMessage,
  encodeRedirectMessage,
  signRedirectQuery,
  verifyPostSignature,
  verifyRedirectSignature,
} from '#lib/saml/bindings.js';
import { generateSamlKey } from '#lib/saml/certificate.js';
import { ALGORITHM, BINDING, NAMEID_FORMAT, NS } from '#lib/saml/constants.js';
import { buildIdpMetadata } from '#lib/saml/metadata.js';
import { buildSignedErrorResponse, buildSignedResponse, newSamlId } from '#lib/saml/response.js';
import { signSamlElement } from '#lib/saml/sign.js';
import { parseXml } from '#lib/saml/xml.js';

/**
 * SAML protocol pieces without HTTP: responses checked by Debian's xmlsec1 (an implementation
 * that shares nothing with ours), request parsing and checks, both bindings' signatures, and the
 * signature-wrapping, entity and deflate-bomb shapes that must be refused.
 */
const NOW = Date.parse('2026-11-23T10:00:00Z');
const SSO = 'https://id.example.com/saml/sso';
const SP: RegisteredProvider = {
  entityId: 'https://sp.example.com/metadata',
  acsUrls: ['https://sp.example.com/acs', 'https://sp.example.com/acs2'],
  nameIdFormat: NAMEID_FORMAT.persistent,
};
const requireAll = process.env.KEYPLANE_REQUIRE_ALL === '1';
const xmlsecMissing = !existsSync('/usr/bin/xmlsec1');

const keys = Promise.all([
  generateSamlKey({ commonName: 'Keyplane IdP', now: NOW, validDays: 365 }),
  generateSamlKey({ commonName: 'Service provider', now: NOW, validDays: 365, modulusLength: 2048 }),
  generateSamlKey({ commonName: 'Attacker', now: NOW, validDays: 365, modulusLength: 2048 }),
]);

function reason(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    return (error as { reason?: string }).reason ?? (error as Error).message;
  }
}

function authnRequestXml(
  attributes: Record<string, string> = {},
  inner: (root: ReturnType<ReturnType<typeof create>['ele']>) => void = () => undefined,
): { xml: string; id: string } {
  const id = newSamlId();
  const root = create().ele(NS.protocol, 'samlp:AuthnRequest', {
    ID: id,
    Version: '2.0',
    IssueInstant: new Date(NOW).toISOString(),
    Destination: SSO,
    AssertionConsumerServiceURL: 'https://sp.example.com/acs',
    ProtocolBinding: BINDING.post,
    ...attributes,
  });
  root.ele(NS.assertion, 'saml:Issuer').txt(SP.entityId);
  inner(root);
  return { xml: root.end({ headless: true }), id };
}

t.test(
  'a signed Response verifies with xmlsec1 at both signatures and says what the contract says',
  { skip: xmlsecMissing && !requireAll ? 'xmlsec1 is not installed' : false },
  async (t) => {
    const [idp] = await keys;
    const xml = buildSignedResponse(
      {
        issuer: 'https://id.example.com/saml/metadata',
        destination: 'https://sp.example.com/acs',
        inResponseTo: '_req1',
        audience: SP.entityId,
        nameId: 'usr_123',
        nameIdFormat: NAMEID_FORMAT.persistent,
        sessionIndex: 'ses_1',
        authnInstant: NOW - 1000,
        assurance: 'passkey',
        attributes: {
          'urn:keyplane:attribute:username': ['ada'],
          'urn:keyplane:attribute:display-name': ['<Ada & "co">'],
        },
        now: NOW,
      },
      idp,
    );
    const dir = mkdtempSync(join(tmpdir(), 'keyplane-saml-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'response.xml'), xml);
    writeFileSync(join(dir, 'idp.crt'), idp.certificatePem);
    const verify = (xpath: string) =>
      execFileSync(
        'xmlsec1',
        [
          '--verify',
          '--pubkey-cert-pem',
          join(dir, 'idp.crt'),
          '--trusted-pem',
          join(dir, 'idp.crt'),
          '--id-attr:ID',
          'urn:oasis:names:tc:SAML:2.0:protocol:Response',
          '--id-attr:ID',
          'urn:oasis:names:tc:SAML:2.0:assertion:Assertion',
          '--node-xpath',
          xpath,
          join(dir, 'response.xml'),
        ],
        { stdio: 'pipe' },
      ).toString();
    t.doesNotThrow(() => verify("/*[local-name()='Response']/*[local-name()='Signature']"), 'the Response signature');
    t.doesNotThrow(
      () => verify("//*[local-name()='Assertion']/*[local-name()='Signature']"),
      'the Assertion signature',
    );
    writeFileSync(join(dir, 'response.xml'), xml.replace('usr_123', 'usr_666'));
    t.throws(
      () => verify("//*[local-name()='Assertion']/*[local-name()='Signature']"),
      'a changed NameID breaks the assertion signature',
    );

    const doc = parseXml(xml);
    const text = (local: string) => doc.getElementsByTagNameNS(NS.assertion, local)[0]?.textContent;
    t.equal(text('NameID'), 'usr_123');
    t.equal(text('Audience'), SP.entityId);
    t.equal(text('AuthnContextClassRef'), 'urn:keyplane:assurance:passkey');
    const confirmation = doc.getElementsByTagNameNS(NS.assertion, 'SubjectConfirmationData')[0]!;
    t.equal(confirmation.getAttribute('Recipient'), 'https://sp.example.com/acs');
    t.equal(confirmation.getAttribute('InResponseTo'), '_req1');
    t.equal(confirmation.getAttribute('NotOnOrAfter'), '2026-11-23T10:05:00Z');
    t.equal(
      [...doc.getElementsByTagNameNS(NS.assertion, 'AttributeValue')].map((v) => v.textContent)[1],
      '<Ada & "co">',
      'values are escaped, never markup',
    );
    const signatureAfterIssuer = doc.documentElement!.getElementsByTagNameNS(NS.dsig, 'Signature')[0]!;
    t.equal(
      (signatureAfterIssuer.previousSibling as { localName?: string }).localName,
      'Issuer',
      'the signature follows the Issuer (schema order)',
    );

    const error = buildSignedErrorResponse(
      {
        issuer: 'https://id.example.com/saml/metadata',
        destination: 'https://sp.example.com/acs',
        status: 'urn:oasis:names:tc:SAML:2.0:status:Responder',
        subStatus: 'urn:oasis:names:tc:SAML:2.0:status:NoAuthnContext',
        now: NOW,
      },
      idp,
    );
    writeFileSync(join(dir, 'response.xml'), error);
    t.doesNotThrow(
      () => verify("/*[local-name()='Response']/*[local-name()='Signature']"),
      'an error Response is signed too',
    );
    t.notMatch(error, /Assertion/);
  },
);

t.test('metadata lists the signing certificates and both bindings', async (t) => {
  const [idp] = await keys;
  const xml = buildIdpMetadata({
    entityId: 'https://id.example.com/saml/metadata',
    ssoUrl: SSO,
    sloUrl: 'https://id.example.com/saml/slo',
    certificatesPem: [idp.certificatePem],
  });
  const doc = parseXml(xml);
  t.equal(doc.documentElement!.getAttribute('entityID'), 'https://id.example.com/saml/metadata');
  t.equal(doc.getElementsByTagNameNS(NS.metadata, 'SingleSignOnService').length, 2);
  t.match(doc.getElementsByTagNameNS(NS.dsig, 'X509Certificate')[0]!.textContent, /^MII/);
});

t.test(
  'POST binding: a request signed by the pinned key verifies, and its signed bytes are what is read',
  async (t) => {
    const [, sp] = await keys;
    const { xml, id } = authnRequestXml();
    const signed = signSamlElement(xml, id, sp);
    const verified = verifyPostSignature(signed, sp.certificatePem);
    t.ok(verified);
    t.equal(parseAuthnRequest(verified!).id, id);
    // Comments do not change exclusive c14n: the verified bytes carry the whole text.
    const commented = signed.replace(`>${SP.entityId}<`, `>${SP.entityId.replace('sp.', 'sp.<!---->')}<`);
    const read = verifyPostSignature(commented, sp.certificatePem);
    t.equal(read && parseAuthnRequest(read).issuer, SP.entityId);
  },
);

t.test('POST binding refuses other keys, key-info substitution, tampering and every wrapping shape', async (t) => {
  const [, sp, attacker] = await keys;
  const { xml, id } = authnRequestXml();
  const signed = signSamlElement(xml, id, sp);
  t.equal(
    verifyPostSignature(signSamlElement(xml, id, attacker), sp.certificatePem),
    null,
    'signed by another key (its own certificate in KeyInfo)',
  );
  t.equal(verifyPostSignature(xml, sp.certificatePem), null, 'unsigned');
  t.equal(
    verifyPostSignature(signed.replace('https://sp.example.com/acs', 'https://evil.example/acs'), sp.certificatePem),
    null,
    'a changed ACS URL',
  );
  // XSW: the signed request moved under a new root with another ID.
  const evil = authnRequestXml({ AssertionConsumerServiceURL: 'https://evil.example/acs' });
  const wrapped = evil.xml.replace(
    '</samlp:AuthnRequest>',
    `${signed.replace(/^<\?xml[^>]*>/, '')}</samlp:AuthnRequest>`,
  );
  t.equal(verifyPostSignature(wrapped, sp.certificatePem), null, 'signed element wrapped inside an unsigned one');
  // XSW: the signature copied into an unsigned request with the signed one's ID.
  const signature = /<ds:Signature[\s\S]*<\/ds:Signature>/.exec(signed)![0];
  const copied = evil.xml
    .replace(`ID="${evil.id}"`, `ID="${id}"`)
    .replace('</saml:Issuer>', `</saml:Issuer>${signature}`);
  t.equal(verifyPostSignature(copied, sp.certificatePem), null, 'a signature lifted onto other content');
  // Two signatures, or a reference to something other than the root.
  t.equal(
    verifyPostSignature(
      signed.replace('</samlp:AuthnRequest>', `${signature}</samlp:AuthnRequest>`),
      sp.certificatePem,
    ),
    null,
    'two signatures',
  );
  const inner = authnRequestXml({}, (root) => {
    root
      .ele(NS.protocol, 'samlp:Extensions')
      .ele('urn:x', 'x:Data', { ID: '_' + 'a'.repeat(40) })
      .txt('signed part');
  });
  const partial = new SignedXml({
    privateKey: sp.privateKeyPem,
    publicCert: sp.certificatePem,
    signatureAlgorithm: ALGORITHM.rsaSha256,
    canonicalizationAlgorithm: ALGORITHM.excC14n,
  });
  partial.addReference({
    xpath: `//*[@ID='_${'a'.repeat(40)}']`,
    digestAlgorithm: ALGORITHM.sha256,
    transforms: [ALGORITHM.enveloped, ALGORITHM.excC14n],
  });
  partial.computeSignature(inner.xml, {
    prefix: 'ds',
    location: { reference: "/*/*[local-name(.)='Issuer']", action: 'after' },
  });
  t.equal(
    verifyPostSignature(partial.getSignedXml(), sp.certificatePem),
    null,
    'a signature over a child, not the request',
  );
});

t.test('Redirect binding: the detached signature over the query as received, RSA-SHA256 only', async (t) => {
  const [, sp, attacker] = await keys;
  const { xml } = authnRequestXml();
  const query = signRedirectQuery('SAMLRequest', xml, 'relay-1', sp.privateKeyPem);
  t.equal(verifyRedirectSignature(query, sp.certificatePem), true);
  t.equal(decodeRedirectMessage(decodeURIComponent(/SAMLRequest=([^&]+)/.exec(query)![1]!)), xml);
  t.equal(verifyRedirectSignature(query, attacker.certificatePem), false, 'another certificate');
  t.equal(verifyRedirectSignature(query.replace('relay-1', 'relay-2'), sp.certificatePem), false, 'RelayState changed');
  t.equal(
    verifyRedirectSignature(
      query.replace(
        /SAMLRequest=[^&]+/,
        `SAMLRequest=${encodeURIComponent(encodeRedirectMessage(xml.replace('acs', 'acs2')))}`,
      ),
      sp.certificatePem,
    ),
    false,
    'message changed',
  );
  t.equal(
    verifyRedirectSignature(
      query.replace(
        encodeURIComponent(ALGORITHM.rsaSha256),
        encodeURIComponent('http://www.w3.org/2000/09/xmldsig#rsa-sha1'),
      ),
      sp.certificatePem,
    ),
    false,
    'SHA-1 is refused',
  );
  t.equal(verifyRedirectSignature(`${query}&SAMLRequest=x`, sp.certificatePem), false, 'a repeated parameter');
  t.equal(verifyRedirectSignature(query.replace(/&Signature=.*/, ''), sp.certificatePem), false, 'no signature');
  t.equal(verifyRedirectSignature(query, 'not a certificate'), false);
});

t.test('refuses DTDs, external entities, deflate bombs and garbage before reading anything', async (t) => {
  const bomb = deflateRawSync(Buffer.alloc(20 * 1024 * 1024, 0x20)).toString('base64');
  t.throws(() => decodeRedirectMessage(bomb), /size limit/, 'a deflate bomb stops at the cap');
  t.throws(() => decodeRedirectMessage('not deflate at all'), /DEFLATE/);
  const xxe =
    '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">&x;</samlp:AuthnRequest>';
  t.equal(
    reason(() => parseAuthnRequest(xxe)),
    'saml_request_invalid',
    'external entity',
  );
  const laughs = '<!DOCTYPE l [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><l>&b;</l>';
  t.equal(
    reason(() => parseAuthnRequest(laughs)),
    'saml_request_invalid',
    'entity expansion',
  );
  for (const garbage of ['', '<unclosed', 'plain text', '<a><b></a>'])
    t.equal(
      reason(() => parseAuthnRequest(garbage)),
      'saml_request_invalid',
      JSON.stringify(garbage),
    );
});

t.test(
  'AuthnRequest checks: issuer, destination, skew, ACS, binding, NameID format and requested context',
  async (t) => {
    const check = (
      attributes: Record<string, string> = {},
      signed = false,
      inner?: Parameters<typeof authnRequestXml>[1],
    ) =>
      checkAuthnRequest(parseAuthnRequest(authnRequestXml(attributes, inner).xml), SP, {
        ssoUrl: SSO,
        now: NOW,
        signed,
      });
    t.match(check(), {
      acsUrl: 'https://sp.example.com/acs',
      nameIdFormat: NAMEID_FORMAT.persistent,
      forceAuthn: false,
    });
    t.match(check({ ForceAuthn: 'true', IsPassive: '1' }), { forceAuthn: true, isPassive: true });
    t.equal(
      check({ AssertionConsumerServiceURL: '', AssertionConsumerServiceIndex: '1' }).acsUrl,
      'https://sp.example.com/acs2',
    );
    t.equal(
      reason(() => check({ AssertionConsumerServiceURL: 'https://evil.example/acs' })),
      'saml_acs_not_registered',
    );
    t.equal(
      reason(() => check({ AssertionConsumerServiceURL: '', AssertionConsumerServiceIndex: '7' })),
      'saml_acs_not_registered',
    );
    t.equal(
      reason(() => check({ Destination: 'https://other.example/sso' })),
      'saml_request_invalid',
    );
    t.equal(
      reason(() => check({ Destination: '' }, true)),
      'saml_request_invalid',
      'a signed request must name its Destination',
    );
    t.equal(
      reason(() => check({ IssueInstant: new Date(NOW - 600_000).toISOString() })),
      'saml_request_invalid',
      'stale',
    );
    t.equal(
      reason(() => check({ IssueInstant: new Date(NOW + 600_000).toISOString() })),
      'saml_request_invalid',
      'from the future',
    );
    t.equal(
      reason(() => check({ ProtocolBinding: BINDING.redirect })),
      'saml_request_invalid',
    );
    t.equal(
      reason(() => check({ Version: '1.1' })),
      'saml_request_invalid',
    );
    t.equal(
      reason(() => check({ ID: '1-not-an-ncname' })),
      'saml_request_invalid',
    );
    t.equal(
      reason(() =>
        checkAuthnRequest(
          parseAuthnRequest(authnRequestXml().xml),
          { ...SP, entityId: 'https://other.example' },
          { ssoUrl: SSO, now: NOW, signed: false },
        ),
      ),
      'saml_unknown_provider',
    );
    t.equal(
      reason(() =>
        check({}, false, (root) => {
          root.ele(NS.assertion, 'saml:Issuer').txt('https://second.example');
        }),
      ),
      'saml_request_invalid',
      'two Issuers',
    );
    t.equal(
      check({}, false, (root) => {
        root.ele(NS.protocol, 'samlp:NameIDPolicy', { Format: NAMEID_FORMAT.email });
      }).nameIdFormat,
      NAMEID_FORMAT.email,
    );
    t.equal(
      reason(() =>
        check({}, false, (root) => {
          root.ele(NS.protocol, 'samlp:NameIDPolicy', {
            Format: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
          });
        }),
      ),
      'saml_request_invalid',
    );
    const context = (comparison: string, ...refs: string[]) =>
      check({}, false, (root) => {
        const c = root.ele(NS.protocol, 'samlp:RequestedAuthnContext', { Comparison: comparison });
        for (const ref of refs) c.ele(NS.assertion, 'saml:AuthnContextClassRef').txt(ref);
      }).requiredAssurance;
    t.equal(context('minimum', 'urn:keyplane:assurance:sensitive'), 'sensitive');
    t.equal(context('better', 'urn:keyplane:assurance:passkey'), 'sensitive');
    t.equal(context('better', 'urn:keyplane:assurance:sensitive'), null, 'nothing is better than sensitive');
    t.equal(context('exact', 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport'), 'passkey');
    t.equal(context('minimum', 'urn:example:unknown-class'), null, 'an unknown class cannot be met honestly');
  },
);
