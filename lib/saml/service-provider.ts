import { X509Certificate } from 'node:crypto';
import type { Element } from '@xmldom/xmldom';
import { create } from 'xmlbuilder2';
import { fail } from '../errors/keyplane-error.js';
import { signRedirectQuery } from './bindings.js';
import { BINDING, NAMEID_FORMAT, NS } from './constants.js';
import { newSamlId } from './response.js';
import { SamlXmlError, childElements, parseXml } from './xml.js';

/**
 * Keyplane as a SAML 2.0 service provider of an upstream IdP (docs/federation.md#saml-connections):
 * the IdP's metadata read, the SP's own metadata, and the AuthnRequest sent by the HTTP-Redirect
 * binding, signed on the query (saml-bindings-2.0 §3.4.4.1). Pure: keys and times are arguments.
 */

/** What an upstream IdP's metadata tells its service provider (saml-metadata-2.0 §2.4.3). */
export interface UpstreamIdpMetadata {
  entityId: string;
  /** The SingleSignOnService of the HTTP-Redirect binding. */
  ssoUrl: string;
  /** The SingleLogoutService of the HTTP-Redirect binding, when it has one. */
  sloUrl?: string;
  /** Its signing certificates (PEM), pinned: a signature verifies against one of these or not at all. */
  certificatesPem: string[];
  /** The earliest `notAfter` of those certificates (ms), for a warning before it expires. */
  certificatesNotAfter: number;
}

const invalidMetadata = (message: string) => fail('invalid_request', `the IdP metadata ${message}`);

const pemOf = (base64: string) =>
  `-----BEGIN CERTIFICATE-----\n${base64
    .replace(/\s+/g, '')
    .replace(/(.{64})/g, '$1\n')
    .trim()}\n-----END CERTIFICATE-----\n`;

function httpsOrLoopbackUrl(value: string | null, what: string): string {
  let url: URL;
  try {
    url = new URL(value ?? '');
  } catch {
    throw invalidMetadata(`names no usable ${what}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidMetadata(`names no usable ${what}`);
  return url.href;
}

/**
 * Reads an IdP's EntityDescriptor (or an EntitiesDescriptor holding exactly one): its entityID,
 * the Redirect-binding SSO (required) and SLO locations, and the signing certificates (a
 * KeyDescriptor with `use="signing"` or no `use`). Refused: no IDPSSODescriptor, no certificate,
 * a certificate that does not parse, a DTD, more than 256 KB.
 */
export function parseIdpMetadata(xml: string): UpstreamIdpMetadata {
  let root: Element;
  try {
    root = parseXml(xml).documentElement!;
  } catch (error) {
    throw invalidMetadata(error instanceof SamlXmlError ? `does not parse (${error.message})` : 'does not parse');
  }
  if (root.namespaceURI === NS.metadata && root.localName === 'EntitiesDescriptor') {
    const entities = childElements(root, NS.metadata, 'EntityDescriptor');
    if (entities.length !== 1) throw invalidMetadata('must describe exactly one entity');
    root = entities[0]!;
  }
  if (root.namespaceURI !== NS.metadata || root.localName !== 'EntityDescriptor')
    throw invalidMetadata('is not an EntityDescriptor');
  const entityId = root.getAttribute('entityID') ?? '';
  if (entityId === '' || entityId.length > 1024) throw invalidMetadata('has no entityID');
  const descriptors = childElements(root, NS.metadata, 'IDPSSODescriptor');
  if (descriptors.length !== 1) throw invalidMetadata('has no (or more than one) IDPSSODescriptor');
  const idp = descriptors[0]!;
  if (!(idp.getAttribute('protocolSupportEnumeration') ?? '').split(/\s+/).includes(NS.protocol))
    throw invalidMetadata('does not support SAML 2.0');
  const location = (name: string) =>
    childElements(idp, NS.metadata, name).find((e) => e.getAttribute('Binding') === BINDING.redirect);
  const sso = location('SingleSignOnService');
  if (!sso) throw invalidMetadata('has no SingleSignOnService of the HTTP-Redirect binding');
  const slo = location('SingleLogoutService');
  const certificatesPem: string[] = [];
  let certificatesNotAfter = Infinity;
  for (const key of childElements(idp, NS.metadata, 'KeyDescriptor')) {
    const use = key.getAttribute('use');
    if (use !== null && use !== '' && use !== 'signing') continue;
    for (const info of childElements(key, NS.dsig, 'KeyInfo'))
      for (const data of childElements(info, NS.dsig, 'X509Data'))
        for (const cert of childElements(data, NS.dsig, 'X509Certificate')) {
          const pem = pemOf(cert.textContent ?? '');
          let parsed: X509Certificate;
          try {
            parsed = new X509Certificate(pem);
          } catch {
            throw invalidMetadata('holds a certificate that does not parse');
          }
          if (!certificatesPem.includes(pem)) certificatesPem.push(pem);
          certificatesNotAfter = Math.min(certificatesNotAfter, Date.parse(parsed.validTo));
        }
  }
  if (certificatesPem.length === 0) throw invalidMetadata('has no signing certificate');
  if (certificatesPem.length > 10) throw invalidMetadata('has more than 10 signing certificates');
  return {
    entityId,
    ssoUrl: httpsOrLoopbackUrl(sso.getAttribute('Location'), 'SingleSignOnService location'),
    ...(slo ? { sloUrl: httpsOrLoopbackUrl(slo.getAttribute('Location'), 'SingleLogoutService location') } : {}),
    certificatesPem,
    certificatesNotAfter,
  };
}

const base64Body = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');

export interface SpMetadataInput {
  entityId: string;
  acsUrl: string;
  /** Where the IdP sends LogoutResponses (HTTP-Redirect), when Keyplane sends it LogoutRequests. */
  sloUrl?: string;
  /** The certificates AuthnRequests are signed with (current first). */
  certificatesPem: string[];
}

/**
 * The service provider's EntityDescriptor (saml-metadata-2.0 §2.4.4): signed AuthnRequests, signed
 * assertions wanted, the persistent NameID format, one ACS of the HTTP-POST binding.
 */
export function buildSpMetadata(input: SpMetadataInput): string {
  const root = create({ version: '1.0', encoding: 'UTF-8' }).ele(NS.metadata, 'md:EntityDescriptor', {
    entityID: input.entityId,
  });
  const sp = root.ele(NS.metadata, 'md:SPSSODescriptor', {
    protocolSupportEnumeration: NS.protocol,
    AuthnRequestsSigned: 'true',
    WantAssertionsSigned: 'true',
  });
  for (const pem of input.certificatesPem)
    sp.ele(NS.metadata, 'md:KeyDescriptor', { use: 'signing' })
      .ele(NS.dsig, 'ds:KeyInfo')
      .ele(NS.dsig, 'ds:X509Data')
      .ele(NS.dsig, 'ds:X509Certificate')
      .txt(base64Body(pem));
  if (input.sloUrl)
    sp.ele(NS.metadata, 'md:SingleLogoutService', { Binding: BINDING.redirect, Location: input.sloUrl });
  sp.ele(NS.metadata, 'md:NameIDFormat').txt(NAMEID_FORMAT.persistent);
  sp.ele(NS.metadata, 'md:AssertionConsumerService', {
    Binding: BINDING.post,
    Location: input.acsUrl,
    index: '0',
    isDefault: 'true',
  });
  return root.end({ headless: false, prettyPrint: true });
}

const instant = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

export interface AuthnRequestInput {
  spEntityId: string;
  acsUrl: string;
  /** The IdP's Redirect-binding SSO URL (the request's Destination). */
  ssoUrl: string;
  now: number;
  /** Ask the IdP to authenticate the person again (a step-up), saml-core §3.4.1 ForceAuthn. */
  forceAuthn?: boolean;
  privateKeyPem: string;
}

/**
 * An AuthnRequest (saml-core §3.4.1) for the HTTP-POST response binding, asking for a persistent
 * NameID the IdP may create (`AllowCreate`), sent by HTTP-Redirect with its signature on the
 * query (RSA-SHA256). Answers the URL to send the browser to and the request's ID, which the
 * response must name in InResponseTo.
 */
export function buildAuthnRequestRedirect(input: AuthnRequestInput): { url: string; requestId: string } {
  const requestId = newSamlId();
  const root = create({ version: '1.0', encoding: 'UTF-8' }).ele(NS.protocol, 'samlp:AuthnRequest', {
    ID: requestId,
    Version: '2.0',
    IssueInstant: instant(input.now),
    Destination: input.ssoUrl,
    AssertionConsumerServiceURL: input.acsUrl,
    ProtocolBinding: BINDING.post,
    ...(input.forceAuthn ? { ForceAuthn: 'true' } : {}),
  });
  root.ele(NS.assertion, 'saml:Issuer').txt(input.spEntityId);
  root.ele(NS.protocol, 'samlp:NameIDPolicy', { Format: NAMEID_FORMAT.persistent, AllowCreate: 'true' });
  const query = signRedirectQuery('SAMLRequest', root.end({ headless: true }), undefined, input.privateKeyPem);
  return { url: `${input.ssoUrl}${input.ssoUrl.includes('?') ? '&' : '?'}${query}`, requestId };
}

export interface LogoutRequestInput {
  spEntityId: string;
  /** The IdP's Redirect-binding SLO URL. */
  sloUrl: string;
  nameId: string;
  nameIdFormat: string;
  sessionIndex?: string;
  relayState?: string;
  now: number;
  privateKeyPem: string;
}

/** A LogoutRequest (saml-core §3.7.1) by HTTP-Redirect, signed on the query; answers the URL and its ID. */
export function buildLogoutRequestRedirect(input: LogoutRequestInput): { url: string; requestId: string } {
  const requestId = newSamlId();
  const root = create({ version: '1.0', encoding: 'UTF-8' }).ele(NS.protocol, 'samlp:LogoutRequest', {
    ID: requestId,
    Version: '2.0',
    IssueInstant: instant(input.now),
    Destination: input.sloUrl,
  });
  root.ele(NS.assertion, 'saml:Issuer').txt(input.spEntityId);
  root.ele(NS.assertion, 'saml:NameID', { Format: input.nameIdFormat }).txt(input.nameId);
  if (input.sessionIndex) root.ele(NS.protocol, 'samlp:SessionIndex').txt(input.sessionIndex);
  const query = signRedirectQuery('SAMLRequest', root.end({ headless: true }), input.relayState, input.privateKeyPem);
  return { url: `${input.sloUrl}${input.sloUrl.includes('?') ? '&' : '?'}${query}`, requestId };
}
