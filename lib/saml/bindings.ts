import { createVerify, createSign, X509Certificate } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Element } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import { ALGORITHM, NS } from './constants.js';
import { SamlXmlError, childElements, parseXml } from './xml.js';

/**
 * The two bindings (saml-bindings-2.0 §3.4 HTTP-Redirect, §3.5 HTTP-POST) as pure functions:
 * decoding with size caps, and signature checks that trust only the certificate the service
 * provider registered, never one carried in the message.
 */

/** Cap on an inflated Redirect-binding message: a deflate bomb stops here. */
export const MAX_INFLATED_BYTES = 256 * 1024;

export function decodeRedirectMessage(value: string): string {
  if (value.length > 64 * 1024) throw new SamlXmlError('the SAML message is too large');
  let inflated: Buffer;
  try {
    inflated = inflateRawSync(Buffer.from(value, 'base64'), { maxOutputLength: MAX_INFLATED_BYTES });
  } catch {
    throw new SamlXmlError('the SAML message is not raw DEFLATE within the size limit');
  }
  return inflated.toString('utf8');
}

export function encodeRedirectMessage(xml: string): string {
  return deflateRawSync(Buffer.from(xml, 'utf8')).toString('base64');
}

export function decodePostMessage(value: string): string {
  if (value.length > 512 * 1024) throw new SamlXmlError('the SAML message is too large');
  return Buffer.from(value, 'base64').toString('utf8');
}

/**
 * The octets a Redirect-binding signature covers (§3.4.4.1): `SAMLRequest=…&RelayState=…&SigAlg=…`
 * (or SAMLResponse) from the query string exactly as received, still URL-encoded.
 */
export function redirectSignedOctets(rawQuery: string): { octets: string; sigAlg: string; signature: string } | null {
  const raw = new Map<string, string>();
  for (const part of rawQuery.replace(/^\?/, '').split('&')) {
    const eq = part.indexOf('=');
    if (eq < 1) continue;
    const name = part.slice(0, eq);
    // A repeated parameter makes "as received" ambiguous: refuse rather than pick one.
    if (raw.has(name)) return null;
    raw.set(name, part.slice(eq + 1));
  }
  const message = raw.has('SAMLRequest') ? 'SAMLRequest' : raw.has('SAMLResponse') ? 'SAMLResponse' : undefined;
  const sigAlg = raw.get('SigAlg');
  const signature = raw.get('Signature');
  if (!message || sigAlg === undefined || signature === undefined) return null;
  const parts = [`${message}=${raw.get(message)}`];
  if (raw.has('RelayState')) parts.push(`RelayState=${raw.get('RelayState')}`);
  parts.push(`SigAlg=${sigAlg}`);
  return { octets: parts.join('&'), sigAlg: decodeURIComponent(sigAlg), signature: decodeURIComponent(signature) };
}

/** The Redirect-binding parameters a handler reads; each must be exactly what the signature covers. */
export const REDIRECT_PARAMETERS = ['SAMLRequest', 'SAMLResponse', 'RelayState', 'SigAlg', 'Signature'] as const;

/** application/x-www-form-urlencoded decoding of one value, as the query parser does it. */
function formDecode(value: string): string | null {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/**
 * Whether a Redirect-binding query says the same thing to the signature check and to the
 * handler (§3.4.4.1 signs the octets as received): no parameter name in percent-encoding
 * (`Relay%53tate` is RelayState to a query parser but not to the octets), no name twice, and every
 * value the handler read (`decoded`, by name) is the decoding of the raw octets under that name,
 * present exactly when they are.
 */
export function redirectQueryConsistent(rawQuery: string, decoded: Record<string, string | undefined>): boolean {
  const raw = new Map<string, string>();
  for (const part of rawQuery.replace(/^\?/, '').split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    if (name.includes('%') || raw.has(name)) return false;
    raw.set(name, eq < 0 ? '' : part.slice(eq + 1));
  }
  return REDIRECT_PARAMETERS.every((name) => {
    const octets = raw.get(name);
    const value = decoded[name];
    if (octets === undefined || value === undefined) return octets === undefined && value === undefined;
    return formDecode(octets) === value;
  });
}

/** Verifies a Redirect-binding signature with the pinned certificate; RSA-SHA256 only. */
export function verifyRedirectSignature(rawQuery: string, certificatePem: string): boolean {
  const signed = redirectSignedOctets(rawQuery);
  if (!signed || signed.sigAlg !== ALGORITHM.rsaSha256) return false;
  try {
    const key = new X509Certificate(certificatePem).publicKey;
    return createVerify('RSA-SHA256').update(signed.octets).verify(key, Buffer.from(signed.signature, 'base64'));
  } catch {
    return false;
  }
}

/** Signs a Redirect-binding message (the IdP's LogoutResponse); answers the query string. */
export function signRedirectQuery(
  kind: 'SAMLRequest' | 'SAMLResponse',
  xml: string,
  relayState: string | undefined,
  privateKeyPem: string,
): string {
  const parts = [`${kind}=${encodeURIComponent(encodeRedirectMessage(xml))}`];
  if (relayState) parts.push(`RelayState=${encodeURIComponent(relayState)}`);
  parts.push(`SigAlg=${encodeURIComponent(ALGORITHM.rsaSha256)}`);
  const octets = parts.join('&');
  const signature = createSign('RSA-SHA256').update(octets).sign(privateKeyPem, 'base64');
  return `${octets}&Signature=${encodeURIComponent(signature)}`;
}

/**
 * Verifies the enveloped signature of a POST-binding message against the pinned certificate and
 * answers the XML that was signed (research: consume only what was verified). The signature must
 * be a direct child of the root and reference the root by its ID, with exactly one reference:
 * every signature-wrapping shape fails one of these.
 */
export function verifyPostSignature(xml: string, certificatePem: string): string | null {
  const document = parseXml(xml);
  const root = document.documentElement!;
  const signatures: Element[] = childElements(root, NS.dsig, 'Signature');
  const all = document.getElementsByTagNameNS(NS.dsig, 'Signature');
  if (signatures.length !== 1 || all.length !== 1) return null;
  const rootId = root.getAttribute('ID');
  if (!rootId) return null;
  const verifier = new SignedXml({ publicCert: certificatePem, getCertFromKeyInfo: () => null });
  try {
    verifier.loadSignature(signatures[0] as never);
    const references = verifier.getReferences();
    if (references.length !== 1 || references[0]!.uri !== `#${rootId}`) return null;
    if (!verifier.checkSignature(xml)) return null;
    const signedXml = verifier.getSignedReferences();
    return signedXml.length === 1 ? signedXml[0]! : null;
  } catch {
    return null;
  }
}
