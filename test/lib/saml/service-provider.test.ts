import t from 'tap';
import { generateSamlKey } from '#lib/saml/certificate.js';
import { decodeRedirectMessage, verifyRedirectSignature } from '#lib/saml/bindings.js';
import { parseAuthnRequest } from '#lib/saml/authn-request.js';
import { NAMEID_FORMAT } from '#lib/saml/constants.js';
import { buildIdpMetadata } from '#lib/saml/metadata.js';
import { buildSignedErrorResponse, buildSignedResponse, type AssertionInput } from '#lib/saml/response.js';
import { STATUS } from '#lib/saml/constants.js';
import { buildAuthnRequestRedirect, buildSpMetadata, parseIdpMetadata } from '#lib/saml/service-provider.js';
import {
  upstreamResponseClaims,
  verifyUpstreamResponse,
  type UpstreamResponseExpectation,
} from '#lib/saml/verify-upstream-response.js';

/**
 * Keyplane as a SAML service provider, without HTTP: IdP metadata read, the signed AuthnRequest,
 * and every check on the IdP's Response, on real signed XML (xml-crypto, RSA-SHA256), including
 * the signature-wrapping shapes that must be refused.
 */
const NOW = Date.parse('2026-12-07T10:00:00Z');
const IDP = 'https://idp.example.com/saml/metadata';
const SP = 'https://keyplane.example/federation/con_x/saml/metadata';
const ACS = 'https://keyplane.example/federation/con_x/saml/acs';

const keys = Promise.all([
  generateSamlKey({ commonName: 'Upstream IdP', now: NOW, validDays: 365, modulusLength: 2048 }),
  generateSamlKey({ commonName: 'Attacker', now: NOW, validDays: 365, modulusLength: 2048 }),
]);

function reason(fn: () => unknown): { reason?: string; message?: string } {
  try {
    fn();
    return {};
  } catch (error) {
    return { reason: (error as { reason?: string }).reason, message: (error as Error).message };
  }
}

const input = (over: Partial<AssertionInput> = {}): AssertionInput => ({
  issuer: IDP,
  destination: ACS,
  inResponseTo: '_request1',
  audience: SP,
  nameId: 'u-1001',
  nameIdFormat: NAMEID_FORMAT.persistent,
  sessionIndex: '_session1',
  authnInstant: NOW,
  assurance: 'passkey',
  attributes: { mail: ['ada@acme.example'], displayName: ['Ada'] },
  now: NOW,
  ...over,
});

t.test('verifyUpstreamResponse', async (t) => {
  const [idp, attacker] = await keys;
  const expect = (over: Partial<UpstreamResponseExpectation> = {}): UpstreamResponseExpectation => ({
    idpEntityId: IDP,
    certificatesPem: [idp.certificatePem],
    spEntityId: SP,
    acsUrl: ACS,
    now: NOW + 5_000,
    ...over,
  });
  const good = buildSignedResponse(input(), idp);

  t.test('accepts a signed response and reads the signed assertion', async (t) => {
    const verified = verifyUpstreamResponse(good, expect());
    t.match(verified, {
      inResponseTo: '_request1',
      nameId: 'u-1001',
      nameIdFormat: NAMEID_FORMAT.persistent,
      sessionIndex: '_session1',
      attributes: { mail: ['ada@acme.example'] },
    });
    t.same(upstreamResponseClaims(verified), {
      sub: 'u-1001',
      email: 'ada@acme.example',
      name: 'Ada',
      sid: '_session1',
    });
    // A second pinned certificate (rotation at the IdP) still verifies.
    t.ok(verifyUpstreamResponse(good, expect({ certificatesPem: [attacker.certificatePem, idp.certificatePem] })));
  });

  t.test('accepts a response whose assertion alone is signed', async (t) => {
    const [before, after] = good.split('<saml:Assertion');
    const outerSignature = /<ds:Signature[\s\S]*?<\/ds:Signature>/;
    const onlyAssertion = `${before!.replace(outerSignature, '')}<saml:Assertion${after}`;
    t.equal(verifyUpstreamResponse(onlyAssertion, expect()).nameId, 'u-1001');
  });

  t.test('refuses a response altered after signing', async (t) => {
    const altered = good.replace('ada@acme.example', 'ceo@acme.example');
    t.match(
      reason(() => verifyUpstreamResponse(altered, expect())),
      { reason: 'upstream_response_invalid' },
    );
    const renamed = good.replace('>u-1001<', '>u-0001<');
    t.match(
      reason(() => verifyUpstreamResponse(renamed, expect())),
      { reason: 'upstream_response_invalid' },
    );
  });

  t.test('refuses a signature by any key but the pinned one, even with its certificate inside', async (t) => {
    const forged = buildSignedResponse(input(), attacker);
    t.match(
      reason(() => verifyUpstreamResponse(forged, expect())),
      {
        reason: 'upstream_response_invalid',
        message: /does not verify/,
      },
    );
  });

  t.test('refuses an unsigned response', async (t) => {
    const unsigned = good.replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/g, '');
    t.match(
      reason(() => verifyUpstreamResponse(unsigned, expect())),
      {
        reason: 'upstream_response_invalid',
        message: /neither the assertion nor the Response is signed/,
      },
    );
  });

  t.test('refuses another audience, another recipient, another issuer', async (t) => {
    t.match(
      reason(() => verifyUpstreamResponse(good, expect({ spEntityId: 'https://other.example/sp' }))),
      {
        message: /another audience/,
      },
    );
    const elsewhere = buildSignedResponse(
      input({ destination: 'https://keyplane.example/federation/con_y/saml/acs' }),
      idp,
    );
    t.match(
      reason(() => verifyUpstreamResponse(elsewhere, expect())),
      {
        reason: 'upstream_response_invalid',
        message: /Destination|Recipient/,
      },
    );
    t.match(
      reason(() => verifyUpstreamResponse(good, expect({ idpEntityId: 'https://idp.other/metadata' }))),
      {
        message: /Issuer/,
      },
    );
  });

  t.test('refuses an expired assertion and one not valid yet, with a small skew', async (t) => {
    t.ok(verifyUpstreamResponse(good, expect({ now: NOW + 300_000 + 30_000 })), 'inside the skew');
    t.match(
      reason(() => verifyUpstreamResponse(good, expect({ now: NOW + 300_000 + 61_000 }))),
      {
        message: /expired/,
      },
    );
    t.match(
      reason(() => verifyUpstreamResponse(good, expect({ now: NOW - 180_000 }))),
      { message: /not valid yet/ },
    );
  });

  t.test('refuses a transient NameID: the identity is the persistent one', async (t) => {
    const transient = buildSignedResponse(
      input({ nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient' }),
      idp,
    );
    t.match(
      reason(() => verifyUpstreamResponse(transient, expect())),
      { message: /not persistent/ },
    );
  });

  t.test("an IdP's error status is upstream_error, naming its code", async (t) => {
    const denied = buildSignedErrorResponse(
      {
        issuer: IDP,
        destination: ACS,
        inResponseTo: '_request1',
        status: STATUS.responder,
        subStatus: STATUS.requestDenied,
        now: NOW,
      },
      idp,
    );
    t.match(
      reason(() => verifyUpstreamResponse(denied, expect())),
      {
        reason: 'upstream_error',
        message: /RequestDenied/,
      },
    );
  });

  t.test('answers an unsolicited response with inResponseTo null, for the caller to refuse', async (t) => {
    const unsolicited = buildSignedResponse(input({ inResponseTo: undefined as never }), idp);
    t.equal(verifyUpstreamResponse(unsolicited, expect()).inResponseTo, null);
  });

  t.test('refuses signature wrapping', async (t) => {
    const evil = buildSignedResponse(input({ nameId: 'ceo', inResponseTo: '_request1' }), attacker);
    const evilAssertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(evil)![0];
    const signedAssertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(good)![0];
    // A second assertion beside the signed one.
    const two = good.replace('</samlp:Response>', `${evilAssertion}</samlp:Response>`);
    t.match(
      reason(() => verifyUpstreamResponse(two, expect())),
      { message: /exactly one assertion/ },
    );
    // The signed assertion hidden in Extensions, an unsigned one with the same ID in its place.
    const sameId = /ID="(_[0-9a-f]{40})"/.exec(signedAssertion.slice(0, 200))![1]!;
    const impostor = evilAssertion
      .replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/, '')
      .replace(/ID="_[0-9a-f]{40}"/, `ID="${sameId}"`);
    const hidden = good
      .replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/, '')
      .replace(signedAssertion, `<samlp:Extensions>${signedAssertion}</samlp:Extensions>${impostor}`);
    t.match(
      reason(() => verifyUpstreamResponse(hidden, expect())),
      { reason: 'upstream_response_invalid' },
    );
    // A DTD never reaches the parser.
    t.match(
      reason(() =>
        verifyUpstreamResponse(`<!DOCTYPE x [<!ENTITY a "b">]>${good.replace(/^<\?xml[^>]*>/, '')}`, expect()),
      ),
      { reason: 'upstream_response_invalid', message: /DTD/ },
    );
  });
});

t.test('IdP metadata, SP metadata and the signed AuthnRequest', async (t) => {
  const [idp, sp] = await keys;
  const metadata = parseIdpMetadata(
    buildIdpMetadata({
      entityId: IDP,
      ssoUrl: 'https://idp.example.com/sso',
      sloUrl: 'https://idp.example.com/slo',
      certificatesPem: [idp.certificatePem],
    }),
  );
  t.match(metadata, {
    entityId: IDP,
    ssoUrl: 'https://idp.example.com/sso',
    sloUrl: 'https://idp.example.com/slo',
    certificatesPem: [idp.certificatePem.replace(/\r/g, '')],
  });
  t.ok(metadata.certificatesNotAfter > NOW);
  t.match(
    reason(() => parseIdpMetadata('<x/>')),
    { reason: 'invalid_request', message: /EntityDescriptor/ },
  );
  t.match(
    reason(() => parseIdpMetadata(buildSpMetadata({ entityId: SP, acsUrl: ACS, certificatesPem: [] }))),
    {
      message: /IDPSSODescriptor/,
    },
  );

  const spMetadata = buildSpMetadata({ entityId: SP, acsUrl: ACS, certificatesPem: [sp.certificatePem] });
  t.match(spMetadata, /AuthnRequestsSigned="true"/);
  t.match(spMetadata, /WantAssertionsSigned="true"/);
  t.match(spMetadata, `Location="${ACS}"`);

  const { url, requestId } = buildAuthnRequestRedirect({
    spEntityId: SP,
    acsUrl: ACS,
    ssoUrl: 'https://idp.example.com/sso?tenant=1',
    now: NOW,
    privateKeyPem: sp.privateKeyPem,
  });
  const sent = new URL(url);
  t.equal(sent.searchParams.get('tenant'), '1', "the SSO URL's own query is kept");
  t.ok(verifyRedirectSignature(sent.search.replace(/^\?tenant=1&/, ''), sp.certificatePem), 'signed on the query');
  const request = parseAuthnRequest(decodeRedirectMessage(sent.searchParams.get('SAMLRequest')!));
  t.match(request, { id: requestId, issuer: SP, acsUrl: ACS, nameIdFormat: NAMEID_FORMAT.persistent });
});
