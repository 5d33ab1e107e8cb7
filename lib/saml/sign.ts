import { SignedXml } from 'xml-crypto';
import { ALGORITHM } from './constants.js';

export interface SamlSigningKey {
  privateKeyPem: string;
  certificatePem: string;
}

/**
 * Enveloped XML-DSig over the element with this ID (RSA-SHA256, SHA-256 digest, exclusive c14n),
 * placed right after the element's own Issuer as saml-core §5.4.1 and the schema require.
 */
export function signSamlElement(xml: string, id: string, key: SamlSigningKey): string {
  if (!/^_[0-9a-f]{40}$/.test(id)) throw new TypeError('SAML IDs are generated here: _ and 40 hex digits');
  const signer = new SignedXml({
    privateKey: key.privateKeyPem,
    publicCert: key.certificatePem,
    signatureAlgorithm: ALGORITHM.rsaSha256,
    canonicalizationAlgorithm: ALGORITHM.excC14n,
  });
  signer.addReference({
    xpath: `//*[@ID='${id}']`,
    digestAlgorithm: ALGORITHM.sha256,
    transforms: [ALGORITHM.enveloped, ALGORITHM.excC14n],
  });
  signer.computeSignature(xml, {
    prefix: 'ds',
    location: { reference: `//*[@ID='${id}']/*[local-name(.)='Issuer']`, action: 'after' },
  });
  return signer.getSignedXml();
}
