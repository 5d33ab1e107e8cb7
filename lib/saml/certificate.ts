// @peculiar/x509 resolves its algorithms through tsyringe, which needs this polyfill first.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

/**
 * The IdP's signing key: RSA 3072 with a self-signed X.509 certificate, which SPs pin from the
 * metadata (no CA is involved in SAML signature trust). Built with @peculiar/x509 on WebCrypto.
 */
export interface GeneratedSamlKey {
  privateKeyPem: string;
  certificatePem: string;
  notAfter: number;
}

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const RSA = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 3072,
} as const;

export async function generateSamlKey(options: {
  commonName: string;
  now: number;
  validDays: number;
  modulusLength?: 2048 | 3072;
}): Promise<GeneratedSamlKey> {
  const keys = await webcrypto.subtle.generateKey(
    { ...RSA, modulusLength: options.modulusLength ?? RSA.modulusLength },
    true,
    ['sign', 'verify'],
  );
  const notAfter = options.now + options.validDays * 86_400_000;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: webcrypto
      .getRandomValues(new Uint8Array(16))
      .reduce((hex, byte) => hex + byte.toString(16).padStart(2, '0'), '')
      .replace(/^[89a-f]/, '1'),
    name: `CN=${options.commonName.replace(/[,+=<>#;"\\]/g, ' ')}`,
    notBefore: new Date(options.now - 60_000),
    notAfter: new Date(notAfter),
    signingAlgorithm: RSA,
    keys: keys as webcrypto.CryptoKeyPair,
    extensions: [new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true)],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const privateKeyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .trim()}\n-----END PRIVATE KEY-----\n`;
  return { privateKeyPem, certificatePem: certificate.toString('pem'), notAfter };
}
