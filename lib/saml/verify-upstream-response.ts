import type { Document, Element } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import { fail, type KeyplaneError } from '../errors/keyplane-error.js';
import { BEARER, NAMEID_FORMAT, NS, STATUS } from './constants.js';
import { SamlXmlError, childElements, onlyChild, parseXml, textOf } from './xml.js';

/**
 * The checks a service provider makes on an IdP's Response at its ACS (saml-profiles-2.0 §4.1.4.3,
 * §4.1.4.5), pure: the signature first, against the IdP's pinned certificates only, then every
 * field read from the XML that signature covers and nothing else (research: signature wrapping).
 */

export interface UpstreamResponseExpectation {
  /** The IdP's entityID (its metadata's). */
  idpEntityId: string;
  /** The IdP's signing certificates from its metadata: the only keys that count. */
  certificatesPem: string[];
  /** This connection's SP entityID: the assertion's Audience. */
  spEntityId: string;
  /** This connection's ACS URL: the Recipient, and the Response's Destination when it names one. */
  acsUrl: string;
  now: number;
  /** Clock skew allowed on NotBefore and NotOnOrAfter (default 60 s). */
  skewMs?: number;
}

/** What a verified response says. */
export interface VerifiedUpstreamResponse {
  /** The request this answers (null: IdP-initiated, unsolicited). */
  inResponseTo: string | null;
  assertionId: string;
  /** The assertion may not be used at or after this time (ms): its replay record must outlive it. */
  notOnOrAfter: number;
  nameId: string;
  nameIdFormat: string;
  sessionIndex?: string;
  authnContextClassRef?: string;
  /** Attribute name → values, as the IdP sent them. */
  attributes: Record<string, string[]>;
}

const invalid = (message: string): KeyplaneError => fail('upstream_response_invalid', message);

/**
 * Verifies the enveloped signature that is a direct child of `element` and references exactly
 * `element` by its ID, against one of the pinned certificates (never a key carried in the
 * message). Answers the XML that signature covers, or null when `element` carries no signature.
 */
function verifySignedElement(xml: string, element: Element, certificatesPem: string[]): string | null {
  const signatures = childElements(element, NS.dsig, 'Signature');
  if (signatures.length === 0) return null;
  if (signatures.length > 1) throw invalid(`the ${element.localName} carries more than one signature`);
  const id = element.getAttribute('ID');
  if (!id) throw invalid(`the signed ${element.localName} has no ID`);
  let failure = 'the signature does not verify against the certificate in the IdP metadata';
  for (const publicCert of certificatesPem) {
    const verifier = new SignedXml({ publicCert, getCertFromKeyInfo: () => null });
    try {
      verifier.loadSignature(signatures[0] as never);
      const references = verifier.getReferences();
      if (references.length !== 1 || references[0]!.uri !== `#${id}`) {
        failure = `the ${element.localName}'s signature does not cover the ${element.localName} itself`;
        continue;
      }
      if (!verifier.checkSignature(xml)) continue;
      const signed = verifier.getSignedReferences();
      if (signed.length === 1) return signed[0]!;
    } catch (error) {
      if (/multiple elements with the same value/i.test((error as Error).message))
        failure = 'two elements carry the signed ID (signature wrapping)';
    }
  }
  throw invalid(failure);
}

/** The one element of the signed XML, checked to be the element the signature named. */
function reparse(signedXml: string, namespace: string, localName: string, id: string): Element {
  const root = parseXml(signedXml).documentElement!;
  if (root.namespaceURI !== namespace || root.localName !== localName || root.getAttribute('ID') !== id)
    throw invalid('the signed XML is not the element it claims to be');
  return root;
}

function time(value: string | null, what: string): number | undefined {
  if (value === null || value === '') return undefined;
  const parsed = Date.parse(value);
  if (!Number.isFinite(parsed)) throw invalid(`${what} is not a time`);
  return parsed;
}

function statusOf(response: Element): { code: string; sub?: string } {
  const status = onlyChild(response, NS.protocol, 'Status');
  const code = status ? onlyChild(status, NS.protocol, 'StatusCode') : null;
  const sub = code ? onlyChild(code, NS.protocol, 'StatusCode') : null;
  const value = code?.getAttribute('Value') ?? '';
  const subValue = sub?.getAttribute('Value');
  return { code: value, ...(subValue ? { sub: subValue } : {}) };
}

/**
 * A SAML Response posted to the ACS, verified: one assertion, signed itself or inside a signed
 * Response (both signatures checked when both are present), by a pinned certificate; the Issuer
 * the IdP's entityID; a bearer SubjectConfirmation whose Recipient is the ACS URL and whose
 * NotOnOrAfter has not passed; Conditions in time (with `skewMs`) and an AudienceRestriction naming
 * this SP; an AuthnStatement; a persistent NameID. A Response that is not Success is
 * `upstream_error`; everything else that fails is `upstream_response_invalid` naming the check.
 * InResponseTo is answered for the caller to take once; replay of the assertion ID is the caller's.
 */
export function verifyUpstreamResponse(xml: string, expect: UpstreamResponseExpectation): VerifiedUpstreamResponse {
  const skew = expect.skewMs ?? 60_000;
  let document: Document;
  try {
    document = parseXml(xml);
  } catch (error) {
    throw invalid(error instanceof SamlXmlError ? error.message : 'the SAML response does not parse');
  }
  try {
    return check(xml, document, expect, skew);
  } catch (error) {
    if (error instanceof SamlXmlError) throw invalid(error.message);
    throw error;
  }
}

function check(
  xml: string,
  document: Document,
  expect: UpstreamResponseExpectation,
  skew: number,
): VerifiedUpstreamResponse {
  const outer = document.documentElement!;
  if (outer.namespaceURI !== NS.protocol || outer.localName !== 'Response') throw invalid('not a SAML Response');
  if (outer.getAttribute('Version') !== '2.0') throw invalid('only SAML 2.0 is supported');
  if (document.getElementsByTagNameNS(NS.assertion, 'EncryptedAssertion').length > 0)
    throw invalid('encrypted assertions are not supported');
  // Exactly one assertion anywhere, a direct child of the Response: a second one, hidden
  // elsewhere (an Extensions element, inside another signature's Object), is a wrapping attempt.
  const assertions = document.getElementsByTagNameNS(NS.assertion, 'Assertion');
  const direct = childElements(outer, NS.assertion, 'Assertion');
  const status = statusOf(outer);
  if (status.code !== STATUS.success) {
    if (assertions.length > 0) throw invalid('a Response that is not Success carries an assertion');
    const code = (status.sub ?? status.code).split(':').pop() ?? 'error';
    throw fail('upstream_error', `the identity provider answered ${/^[\w.-]{1,64}$/.test(code) ? code : 'error'}`, {
      fields: { error: /^[\w.-]{1,64}$/.test(code) ? code : 'error' },
    });
  }
  if (assertions.length !== 1 || direct.length !== 1) throw invalid('the Response must carry exactly one assertion');

  // The signatures: the Response's and the assertion's, each verified when present; one at least.
  const responseId = outer.getAttribute('ID') ?? '';
  const signedResponse = verifySignedElement(xml, outer, expect.certificatesPem);
  const response = signedResponse === null ? outer : reparse(signedResponse, NS.protocol, 'Response', responseId);
  const assertionInResponse = childElements(response, NS.assertion, 'Assertion');
  if (assertionInResponse.length !== 1) throw invalid('the Response must carry exactly one assertion');
  const assertionId = assertionInResponse[0]!.getAttribute('ID') ?? '';
  const signedAssertion = verifySignedElement(xml, direct[0]!, expect.certificatesPem);
  if (signedResponse === null && signedAssertion === null)
    throw invalid('neither the assertion nor the Response is signed');
  if (signedAssertion !== null && direct[0]!.getAttribute('ID') !== assertionId)
    throw invalid('the signed assertion is not the one in the Response');
  const assertion =
    signedAssertion === null
      ? assertionInResponse[0]!
      : reparse(signedAssertion, NS.assertion, 'Assertion', assertionId);
  if (!/^[A-Za-z_][\w.-]{0,255}$/.test(assertionId)) throw invalid('the assertion ID is missing or not an NCName');

  const destination = response.getAttribute('Destination');
  if (destination && destination !== expect.acsUrl) throw invalid("the Response's Destination is not this ACS URL");
  const responseIssuer = textOf(onlyChild(response, NS.assertion, 'Issuer'));
  if (responseIssuer !== undefined && responseIssuer !== expect.idpEntityId)
    throw invalid("the Response's Issuer is not the connection's IdP");
  if (assertion.getAttribute('Version') !== '2.0') throw invalid('only SAML 2.0 assertions are supported');
  if (textOf(onlyChild(assertion, NS.assertion, 'Issuer')) !== expect.idpEntityId)
    throw invalid("the assertion's Issuer is not the connection's IdP");

  // Subject: a persistent NameID and a bearer confirmation for this ACS, in time.
  const subject = onlyChild(assertion, NS.assertion, 'Subject');
  if (!subject) throw invalid('the assertion has no Subject');
  if (childElements(subject, NS.assertion, 'EncryptedID').length > 0)
    throw invalid('an encrypted NameID is not supported');
  const nameIdElement = onlyChild(subject, NS.assertion, 'NameID');
  const nameId = textOf(nameIdElement);
  if (!nameId || nameId.length > 1024) throw invalid('the assertion names no subject (NameID)');
  const nameIdFormat = nameIdElement!.getAttribute('Format') || NAMEID_FORMAT.unspecified;
  // Who a federated identity is: the persistent NameID, never a transient one or an address.
  if (nameIdFormat !== NAMEID_FORMAT.persistent)
    throw invalid(`the NameID is not persistent (${nameIdFormat.split(':').pop()}); ask the IdP for a persistent one`);
  const confirmations = childElements(subject, NS.assertion, 'SubjectConfirmation').filter(
    (c) => c.getAttribute('Method') === BEARER,
  );
  if (confirmations.length !== 1) throw invalid('the assertion needs exactly one bearer SubjectConfirmation');
  const data = onlyChild(confirmations[0]!, NS.assertion, 'SubjectConfirmationData');
  if (!data) throw invalid('the bearer confirmation has no SubjectConfirmationData');
  if (data.getAttribute('Recipient') !== expect.acsUrl) throw invalid("the assertion's Recipient is not this ACS URL");
  const confirmedUntil = time(data.getAttribute('NotOnOrAfter'), 'NotOnOrAfter');
  if (confirmedUntil === undefined) throw invalid('the bearer confirmation has no NotOnOrAfter');
  if (expect.now >= confirmedUntil + skew) throw invalid('the assertion has expired (NotOnOrAfter)');
  if (time(data.getAttribute('NotBefore'), 'NotBefore') !== undefined)
    throw invalid('a bearer confirmation may not carry NotBefore');
  const inResponseTo = data.getAttribute('InResponseTo') || null;
  const responseInResponseTo = response.getAttribute('InResponseTo') || null;
  if (responseInResponseTo !== inResponseTo) throw invalid('the Response and its assertion answer different requests');

  // Conditions: in time, and for this audience.
  const conditions = onlyChild(assertion, NS.assertion, 'Conditions');
  if (!conditions) throw invalid('the assertion has no Conditions');
  const notBefore = time(conditions.getAttribute('NotBefore'), 'NotBefore');
  const notOnOrAfter = time(conditions.getAttribute('NotOnOrAfter'), 'NotOnOrAfter');
  if (notBefore !== undefined && expect.now + skew < notBefore)
    throw invalid('the assertion is not valid yet (NotBefore)');
  if (notOnOrAfter !== undefined && expect.now >= notOnOrAfter + skew)
    throw invalid('the assertion has expired (NotOnOrAfter)');
  const restrictions = childElements(conditions, NS.assertion, 'AudienceRestriction');
  if (restrictions.length === 0) throw invalid('the assertion has no AudienceRestriction');
  // saml-core §2.5.1.4: every AudienceRestriction must hold; each must name this SP.
  for (const restriction of restrictions)
    if (!childElements(restriction, NS.assertion, 'Audience').some((a) => textOf(a) === expect.spEntityId))
      throw invalid('the assertion is for another audience');

  const statements = childElements(assertion, NS.assertion, 'AuthnStatement');
  if (statements.length !== 1) throw invalid('the assertion needs exactly one AuthnStatement');
  const sessionIndex = statements[0]!.getAttribute('SessionIndex') || undefined;
  const context = onlyChild(statements[0]!, NS.assertion, 'AuthnContext');
  const classRef = context ? textOf(onlyChild(context, NS.assertion, 'AuthnContextClassRef')) : undefined;

  const attributes: Record<string, string[]> = {};
  for (const statement of childElements(assertion, NS.assertion, 'AttributeStatement'))
    for (const attribute of childElements(statement, NS.assertion, 'Attribute')) {
      const name = attribute.getAttribute('Name');
      if (!name || name.length > 256) continue;
      const values = childElements(attribute, NS.assertion, 'AttributeValue')
        .map((v) => textOf(v))
        .filter((v): v is string => v !== undefined && v.length <= 1024);
      (attributes[name] ??= []).push(...values.slice(0, 50));
    }

  return {
    inResponseTo,
    assertionId,
    notOnOrAfter: Math.max(confirmedUntil, notOnOrAfter ?? 0),
    nameId,
    nameIdFormat,
    ...(sessionIndex ? { sessionIndex } : {}),
    ...(classRef ? { authnContextClassRef: classRef } : {}),
    attributes,
  };
}

/** The attribute names IdPs really send an address under (LDAP, eduPerson OID, Entra/ADFS claim URIs). */
const EMAIL_ATTRIBUTES = [
  'mail',
  'email',
  'emailAddress',
  'urn:oid:0.9.2342.19200300.100.1.3',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
  'http://schemas.xmlsoap.org/claims/EmailAddress',
];
const NAME_ATTRIBUTES = [
  'displayName',
  'urn:oid:2.16.840.1.113730.3.1.241',
  'http://schemas.microsoft.com/identity/claims/displayname',
  'cn',
  'urn:oid:2.5.4.3',
];
/** The user principal name (compared with a SCIM userName, inside the org's proved domains only). */
const UPN_ATTRIBUTES = [
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name',
  'eduPersonPrincipalName',
  'urn:oid:1.3.6.1.4.1.5923.1.1.1.6',
  'userPrincipalName',
];

const first = (attributes: Record<string, string[]>, names: string[]) => {
  for (const name of names) {
    const value = attributes[name]?.find((v) => v.trim() !== '');
    if (value !== undefined) return value.trim();
  }
  return undefined;
};

/**
 * The claims a verified response gives a federated sign-in: `sub` the persistent NameID (the
 * identity), `email`, `name` and `preferred_username` from the attributes IdPs send them under,
 * `sid` the SessionIndex. Never an address from the NameID.
 */
export function upstreamResponseClaims(verified: VerifiedUpstreamResponse): Record<string, unknown> {
  const email = first(verified.attributes, EMAIL_ATTRIBUTES);
  const name = first(verified.attributes, NAME_ATTRIBUTES);
  const upn = first(verified.attributes, UPN_ATTRIBUTES);
  return {
    sub: verified.nameId,
    ...(email !== undefined ? { email } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(upn !== undefined ? { preferred_username: upn } : {}),
    ...(verified.sessionIndex !== undefined ? { sid: verified.sessionIndex } : {}),
  };
}
