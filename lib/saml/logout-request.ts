import type { Element } from '@xmldom/xmldom';
import { fail } from '../errors/keyplane-error.js';
import { NS } from './constants.js';
import { SamlXmlError, onlyChild, parseXml, textOf } from './xml.js';

/** A LogoutRequest (saml-core §3.7.1) read field by field; signatures are checked before this reads. */
export interface LogoutRequest {
  id: string;
  issuer: string;
  issueInstant: number;
  destination?: string;
  nameId: string;
  sessionIndexes: string[];
}

const invalid = (message: string) => fail('saml_request_invalid', message);

export function parseLogoutRequest(xml: string): LogoutRequest {
  let root: Element;
  try {
    root = parseXml(xml).documentElement!;
  } catch (error) {
    throw invalid(error instanceof SamlXmlError ? error.message : 'the SAML request does not parse');
  }
  if (root.namespaceURI !== NS.protocol || root.localName !== 'LogoutRequest') throw invalid('not a LogoutRequest');
  if (root.getAttribute('Version') !== '2.0') throw invalid('only SAML 2.0 is supported');
  const id = root.getAttribute('ID') ?? '';
  if (!/^[A-Za-z_][\w.-]{0,255}$/.test(id)) throw invalid('the request ID is missing or not an NCName');
  const issueInstant = Date.parse(root.getAttribute('IssueInstant') ?? '');
  if (!Number.isFinite(issueInstant)) throw invalid('IssueInstant is missing or not a time');
  let issuer: string | undefined;
  let nameId: string | undefined;
  try {
    issuer = textOf(onlyChild(root, NS.assertion, 'Issuer'));
    nameId = textOf(onlyChild(root, NS.assertion, 'NameID'));
  } catch (error) {
    throw invalid((error as Error).message);
  }
  if (!issuer) throw invalid('the request has no Issuer');
  if (!nameId) throw invalid('the LogoutRequest has no NameID (an encrypted one is not supported)');
  const sessionIndexes: string[] = [];
  for (let node = root.firstChild; node; node = node.nextSibling) {
    const element = node as Element;
    if (node.nodeType === 1 && element.namespaceURI === NS.protocol && element.localName === 'SessionIndex') {
      const value = textOf(element);
      if (value) sessionIndexes.push(value);
    }
  }
  const request: LogoutRequest = { id, issuer, issueInstant, nameId, sessionIndexes };
  const destination = root.getAttribute('Destination');
  if (destination) request.destination = destination;
  return request;
}
