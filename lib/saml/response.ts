import { randomBytes } from 'node:crypto';
import { create } from 'xmlbuilder2';
import type { XMLBuilder } from 'xmlbuilder2/lib/interfaces.js';
import { ASSURANCE_CLASS_PREFIX, ATTRNAME_URI, BEARER, NS, STATUS } from './constants.js';
import { signSamlElement, type SamlSigningKey } from './sign.js';

/** A fresh SAML ID: an NCName (`_` first) with 160 random bits. */
export function newSamlId(): string {
  return `_${randomBytes(20).toString('hex')}`;
}

const instant = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

export interface AssertionInput {
  /** The IdP's entityID. */
  issuer: string;
  /** The ACS URL the Response is posted to (a registered one). */
  destination: string;
  inResponseTo?: string;
  /** The SP's entityID. */
  audience: string;
  nameId: string;
  nameIdFormat: string;
  sessionIndex: string;
  authnInstant: number;
  assurance: string;
  attributes: Record<string, string[]>;
  now: number;
  /** How long the assertion may be used (saml-profiles §4.1.4.2: short). */
  validitySeconds?: number;
}

/**
 * A Response with one assertion (saml-core §2, saml-profiles §4.1.4.2): Audience, bearer
 * SubjectConfirmationData with Recipient, InResponseTo and NotOnOrAfter, AuthnStatement with the
 * assurance as class ref. The assertion is signed, then the Response around it.
 */
export function buildSignedResponse(input: AssertionInput, key: SamlSigningKey): string {
  const responseId = newSamlId();
  const assertionId = newSamlId();
  const validity = (input.validitySeconds ?? 300) * 1000;
  const notOnOrAfter = instant(input.now + validity);
  const root = create({ version: '1.0', encoding: 'UTF-8' }).ele(NS.protocol, 'samlp:Response', {
    ID: responseId,
    Version: '2.0',
    IssueInstant: instant(input.now),
    Destination: input.destination,
    ...(input.inResponseTo ? { InResponseTo: input.inResponseTo } : {}),
  });
  root.ele(NS.assertion, 'saml:Issuer').txt(input.issuer);
  root.ele(NS.protocol, 'samlp:Status').ele(NS.protocol, 'samlp:StatusCode', { Value: STATUS.success });
  const assertion = root.ele(NS.assertion, 'saml:Assertion', {
    ID: assertionId,
    Version: '2.0',
    IssueInstant: instant(input.now),
  });
  assertion.ele(NS.assertion, 'saml:Issuer').txt(input.issuer);
  const subject = assertion.ele(NS.assertion, 'saml:Subject');
  subject
    .ele(NS.assertion, 'saml:NameID', { Format: input.nameIdFormat, SPNameQualifier: input.audience })
    .txt(input.nameId);
  subject
    .ele(NS.assertion, 'saml:SubjectConfirmation', { Method: BEARER })
    .ele(NS.assertion, 'saml:SubjectConfirmationData', {
      NotOnOrAfter: notOnOrAfter,
      Recipient: input.destination,
      ...(input.inResponseTo ? { InResponseTo: input.inResponseTo } : {}),
    });
  assertion
    .ele(NS.assertion, 'saml:Conditions', { NotBefore: instant(input.now - 60_000), NotOnOrAfter: notOnOrAfter })
    .ele(NS.assertion, 'saml:AudienceRestriction')
    .ele(NS.assertion, 'saml:Audience')
    .txt(input.audience);
  assertion
    .ele(NS.assertion, 'saml:AuthnStatement', {
      AuthnInstant: instant(input.authnInstant),
      SessionIndex: input.sessionIndex,
    })
    .ele(NS.assertion, 'saml:AuthnContext')
    .ele(NS.assertion, 'saml:AuthnContextClassRef')
    .txt(`${ASSURANCE_CLASS_PREFIX}${input.assurance}`);
  addAttributes(assertion, input.attributes);
  const unsigned = root.end({ headless: false });
  return signSamlElement(signSamlElement(unsigned, assertionId, key), responseId, key);
}

function addAttributes(assertion: XMLBuilder, attributes: Record<string, string[]>): void {
  const entries = Object.entries(attributes).filter(([, values]) => values.length > 0);
  if (entries.length === 0) return;
  const statement = assertion.ele(NS.assertion, 'saml:AttributeStatement');
  for (const [name, values] of entries) {
    const attribute = statement.ele(NS.assertion, 'saml:Attribute', { Name: name, NameFormat: ATTRNAME_URI });
    // xmlbuilder2 escapes text and attribute values: no value can become markup.
    for (const value of values) attribute.ele(NS.assertion, 'saml:AttributeValue').txt(value);
  }
}

export interface ErrorResponseInput {
  issuer: string;
  destination: string;
  inResponseTo?: string;
  status: string;
  subStatus?: string;
  message?: string;
  now: number;
}

/** A signed Response without an assertion, telling the SP why (e.g. Responder/NoAuthnContext). */
export function buildSignedErrorResponse(input: ErrorResponseInput, key: SamlSigningKey): string {
  const responseId = newSamlId();
  const root = create({ version: '1.0', encoding: 'UTF-8' }).ele(NS.protocol, 'samlp:Response', {
    ID: responseId,
    Version: '2.0',
    IssueInstant: instant(input.now),
    Destination: input.destination,
    ...(input.inResponseTo ? { InResponseTo: input.inResponseTo } : {}),
  });
  root.ele(NS.assertion, 'saml:Issuer').txt(input.issuer);
  const status = root.ele(NS.protocol, 'samlp:Status');
  const code = status.ele(NS.protocol, 'samlp:StatusCode', { Value: input.status });
  if (input.subStatus) code.ele(NS.protocol, 'samlp:StatusCode', { Value: input.subStatus });
  if (input.message) status.ele(NS.protocol, 'samlp:StatusMessage').txt(input.message);
  return signSamlElement(root.end({ headless: false }), responseId, key);
}

export interface LogoutResponseInput {
  issuer: string;
  destination: string;
  inResponseTo: string;
  now: number;
  /** Top-level and second-level status codes when the logout did not succeed (default: Success). */
  status?: { code: string; subCode?: string };
}

/** A LogoutResponse (saml-core §3.7.2) for the Redirect binding (signed on the query, not in the XML). */
export function buildLogoutResponse(input: LogoutResponseInput): string {
  const root = create({ version: '1.0', encoding: 'UTF-8' }).ele(NS.protocol, 'samlp:LogoutResponse', {
    ID: newSamlId(),
    Version: '2.0',
    IssueInstant: instant(input.now),
    Destination: input.destination,
    InResponseTo: input.inResponseTo,
  });
  root.ele(NS.assertion, 'saml:Issuer').txt(input.issuer);
  const code = root
    .ele(NS.protocol, 'samlp:Status')
    .ele(NS.protocol, 'samlp:StatusCode', { Value: input.status?.code ?? STATUS.success });
  if (input.status?.subCode) code.ele(NS.protocol, 'samlp:StatusCode', { Value: input.status.subCode });
  return root.end({ headless: true });
}
