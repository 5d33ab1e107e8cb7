import { create } from 'xmlbuilder2';
import { BINDING, NAMEID_FORMAT, NS } from './constants.js';

export interface IdpMetadataInput {
  entityId: string;
  ssoUrl: string;
  sloUrl: string;
  /** Every certificate an SP may see a signature from: the current one first, then those still in use. */
  certificatesPem: string[];
  wantAuthnRequestsSigned?: boolean;
}

const base64Body = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');

/** The IdP's EntityDescriptor (saml-metadata-2.0 §2.4.3). */
export function buildIdpMetadata(input: IdpMetadataInput): string {
  const root = create({ version: '1.0', encoding: 'UTF-8' }).ele(NS.metadata, 'md:EntityDescriptor', {
    entityID: input.entityId,
  });
  const idp = root.ele(NS.metadata, 'md:IDPSSODescriptor', {
    protocolSupportEnumeration: NS.protocol,
    WantAuthnRequestsSigned: String(input.wantAuthnRequestsSigned ?? false),
  });
  for (const pem of input.certificatesPem) {
    idp
      .ele(NS.metadata, 'md:KeyDescriptor', { use: 'signing' })
      .ele(NS.dsig, 'ds:KeyInfo')
      .ele(NS.dsig, 'ds:X509Data')
      .ele(NS.dsig, 'ds:X509Certificate')
      .txt(base64Body(pem));
  }
  for (const binding of [BINDING.redirect, BINDING.post])
    idp.ele(NS.metadata, 'md:SingleLogoutService', { Binding: binding, Location: input.sloUrl });
  for (const format of [NAMEID_FORMAT.persistent, NAMEID_FORMAT.email])
    idp.ele(NS.metadata, 'md:NameIDFormat').txt(format);
  for (const binding of [BINDING.redirect, BINDING.post])
    idp.ele(NS.metadata, 'md:SingleSignOnService', { Binding: binding, Location: input.ssoUrl });
  return root.end({ headless: false, prettyPrint: true });
}
