import type { Element } from '@xmldom/xmldom';
import { fail } from '../errors/keyplane-error.js';
import { ASSURANCE_CLASS_PREFIX, BINDING, NAMEID_FORMAT, NS } from './constants.js';
import { SamlXmlError, onlyChild, parseXml, textOf } from './xml.js';

/**
 * An AuthnRequest (saml-core §3.4.1) read field by field from a parsed document, then checked
 * against the registered service provider (research/protocols §8.3). Nothing here trusts the
 * message to say who signed it; signatures are checked by the bindings before this reads.
 */
export interface AuthnRequest {
  id: string;
  issuer: string;
  issueInstant: number;
  destination?: string;
  acsUrl?: string;
  acsIndex?: number;
  protocolBinding?: string;
  forceAuthn: boolean;
  isPassive: boolean;
  nameIdFormat?: string;
  requestedAuthnContext?: { comparison: 'exact' | 'minimum' | 'better' | 'maximum'; classRefs: string[] };
}

const LEVELS = ['recovery', 'email', 'passkey', 'sensitive'] as const;
export type SamlAssurance = (typeof LEVELS)[number];

const invalid = (message: string) => fail('saml_request_invalid', message);

export function parseAuthnRequest(xml: string): AuthnRequest {
  let root: Element;
  try {
    root = parseXml(xml).documentElement!;
  } catch (error) {
    throw invalid(error instanceof SamlXmlError ? error.message : 'the SAML request does not parse');
  }
  if (root.namespaceURI !== NS.protocol || root.localName !== 'AuthnRequest') throw invalid('not an AuthnRequest');
  if (root.getAttribute('Version') !== '2.0') throw invalid('only SAML 2.0 is supported');
  const id = root.getAttribute('ID') ?? '';
  if (!/^[A-Za-z_][\w.-]{0,255}$/.test(id)) throw invalid('the request ID is missing or not an NCName');
  const issueInstant = Date.parse(root.getAttribute('IssueInstant') ?? '');
  if (!Number.isFinite(issueInstant)) throw invalid('IssueInstant is missing or not a time');
  let issuerElement: Element | null;
  let policy: Element | null;
  let context: Element | null;
  try {
    issuerElement = onlyChild(root, NS.assertion, 'Issuer');
    policy = onlyChild(root, NS.protocol, 'NameIDPolicy');
    context = onlyChild(root, NS.protocol, 'RequestedAuthnContext');
  } catch (error) {
    throw invalid((error as Error).message);
  }
  const issuer = textOf(issuerElement);
  if (!issuer) throw invalid('the request has no Issuer');
  const request: AuthnRequest = {
    id,
    issuer,
    issueInstant,
    forceAuthn: root.getAttribute('ForceAuthn') === 'true' || root.getAttribute('ForceAuthn') === '1',
    isPassive: root.getAttribute('IsPassive') === 'true' || root.getAttribute('IsPassive') === '1',
  };
  const destination = root.getAttribute('Destination');
  if (destination) request.destination = destination;
  const acsUrl = root.getAttribute('AssertionConsumerServiceURL');
  if (acsUrl) request.acsUrl = acsUrl;
  const acsIndex = root.getAttribute('AssertionConsumerServiceIndex');
  if (acsIndex !== null && acsIndex !== '') {
    if (!/^\d{1,5}$/.test(acsIndex)) throw invalid('AssertionConsumerServiceIndex is not a number');
    request.acsIndex = Number(acsIndex);
  }
  const binding = root.getAttribute('ProtocolBinding');
  if (binding) request.protocolBinding = binding;
  const format = policy?.getAttribute('Format');
  if (format) request.nameIdFormat = format;
  if (context) {
    const comparison = context.getAttribute('Comparison') || 'exact';
    if (!['exact', 'minimum', 'better', 'maximum'].includes(comparison))
      throw invalid('RequestedAuthnContext Comparison is unknown');
    const classRefs: string[] = [];
    for (let node = context.firstChild; node; node = node.nextSibling) {
      const element = node as Element;
      if (
        node.nodeType === 1 &&
        element.namespaceURI === NS.assertion &&
        element.localName === 'AuthnContextClassRef'
      ) {
        const value = textOf(element);
        if (value) classRefs.push(value);
      }
    }
    request.requestedAuthnContext = { comparison: comparison as 'exact', classRefs };
  }
  return request;
}

/** What a service provider registered, as far as request checks need it. */
export interface RegisteredProvider {
  entityId: string;
  acsUrls: string[];
  nameIdFormat: string;
}

export interface CheckedRequest {
  acsUrl: string;
  nameIdFormat: string;
  /** The weakest assurance the request accepts, when it asked for one; null when it cannot be met. */
  requiredAssurance?: SamlAssurance | null;
  forceAuthn: boolean;
  isPassive: boolean;
}

/** Standard classes a passkey sign-in honestly meets (REFEDS: a UV passkey is multi-factor). */
const STANDARD_CLASSES: Record<string, SamlAssurance> = {
  'urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified': 'recovery',
  'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport': 'passkey',
  'https://refeds.org/profile/sfa': 'passkey',
  'https://refeds.org/profile/mfa': 'passkey',
};

function levelOf(classRef: string): SamlAssurance | undefined {
  if (classRef.startsWith(ASSURANCE_CLASS_PREFIX)) {
    const level = classRef.slice(ASSURANCE_CLASS_PREFIX.length);
    return (LEVELS as readonly string[]).includes(level) ? (level as SamlAssurance) : undefined;
  }
  return STANDARD_CLASSES[classRef];
}

/**
 * The request against its provider: Destination (required when signed), IssueInstant within
 * `skewMs`, a registered ACS URL or index (never an unregistered URL), the POST binding, a NameID
 * format the provider may have, and the assurance the requested context asks for.
 */
export function checkAuthnRequest(
  request: AuthnRequest,
  provider: RegisteredProvider,
  context: { ssoUrl: string; now: number; skewMs?: number; signed: boolean },
): CheckedRequest {
  if (request.issuer !== provider.entityId)
    throw fail('saml_unknown_provider', 'the Issuer is not this service provider');
  if (request.destination !== undefined ? request.destination !== context.ssoUrl : context.signed) {
    throw invalid("Destination must be this IdP's SSO URL (and is required on signed requests)");
  }
  const skew = context.skewMs ?? 300_000;
  if (Math.abs(context.now - request.issueInstant) > skew)
    throw invalid('IssueInstant is outside the allowed clock skew');
  if (request.protocolBinding !== undefined && request.protocolBinding !== BINDING.post)
    throw invalid('responses are sent by HTTP-POST only');
  let acsUrl: string | undefined;
  if (request.acsUrl !== undefined) acsUrl = provider.acsUrls.find((url) => url === request.acsUrl);
  else if (request.acsIndex !== undefined) acsUrl = provider.acsUrls[request.acsIndex];
  else acsUrl = provider.acsUrls[0];
  if (!acsUrl)
    throw fail(
      'saml_acs_not_registered',
      'the AssertionConsumerServiceURL is not registered for this service provider',
    );

  let nameIdFormat = provider.nameIdFormat;
  const asked = request.nameIdFormat;
  if (asked && asked !== NAMEID_FORMAT.unspecified) {
    if (asked !== NAMEID_FORMAT.persistent && asked !== NAMEID_FORMAT.email)
      throw invalid('that NameID format is not offered');
    nameIdFormat = asked;
  }
  const checked: CheckedRequest = {
    acsUrl,
    nameIdFormat,
    forceAuthn: request.forceAuthn,
    isPassive: request.isPassive,
  };
  const wanted = request.requestedAuthnContext;
  if (wanted) checked.requiredAssurance = requiredLevel(wanted.comparison, wanted.classRefs);
  return checked;
}

/** saml-core §3.3.2.2.1: the weakest level that satisfies the comparison, or null when none can. */
function requiredLevel(
  comparison: 'exact' | 'minimum' | 'better' | 'maximum',
  classRefs: string[],
): SamlAssurance | null {
  const levels = classRefs.map(levelOf).filter((level): level is SamlAssurance => level !== undefined);
  if (levels.length === 0) return null;
  const rank = (level: SamlAssurance) => LEVELS.indexOf(level);
  const weakest = levels.reduce((a, b) => (rank(a) <= rank(b) ? a : b));
  if (comparison === 'better') return LEVELS[rank(weakest) + 1] ?? null;
  // `maximum` and `exact` are met by a sign-in at the weakest level listed or (maximum) below it;
  // the session proves what it proves, so the route decides whether that is acceptable.
  return weakest;
}
