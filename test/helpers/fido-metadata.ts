import { execFileSync } from 'node:child_process';
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CompactSign } from 'jose';
import { credentialRecord } from '../../control-plane/src/accounts/sign-up.js';
import { creationOptions, readRegistration, verifyRegistration } from '../../control-plane/src/passkeys/ceremony.js';
import type { RunningServices } from '../../control-plane/src/services.js';
import type { CeremonyTweaks, SoftAuthenticator } from './soft-authenticator.js';

/**
 * A FIDO Metadata Service stand-in for tests: a test root CA that signs the BLOB signer's
 * certificate, an attestation root with one attestation certificate per AAGUID (made with the
 * `openssl` CLI), and BLOBs signed as JWTs with jose, so SimpleWebAuthn verifies them exactly as
 * the FIDO Alliance's (docs/passkeys.md#metadata).
 */
export interface TestPki {
  dir: string;
  /** The BLOB's root, as `passkeys.mds.rootCertificateFile` names it. */
  rootFile: string;
  rootPem: string;
  attestationRootDer: Buffer;
  /** An attestation key and its certificate chain (leaf only) for an authenticator model. */
  attestation(aaguid: string): { privateKey: KeyObject; x5c: Buffer[] };
  /** A BLOB signed by the test root's signer. */
  blob(entries: BlobEntry[], no?: number): Promise<string>;
}

export interface BlobEntry {
  aaguid: string;
  description: string;
  /** FIDO MDS statuses, oldest first (`FIDO_CERTIFIED_L1`, `REVOKED`, `ATTESTATION_KEY_COMPROMISE`…). */
  statuses?: string[];
}

/** `args` split at spaces, then `more` as they are (a subject with spaces). */
const openssl = (dir: string, args: string, ...more: string[]) =>
  execFileSync('openssl', [...args.split(' '), ...more], { cwd: dir, stdio: 'pipe' });
/** A new P-256 key and a request (`-x509`: a self-signed certificate instead). */
const NEW_KEY = 'req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes';

function makeRoot(dir: string, name: string, cn: string) {
  openssl(
    dir,
    `${NEW_KEY} -x509 -keyout ${name}.key -out ${name}.pem -days 30 -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign`,
    '-subj',
    `/CN=${cn}`,
  );
}

function makeLeaf(dir: string, name: string, issuer: string, subject: string, extensions: string[]) {
  openssl(dir, `${NEW_KEY} -keyout ${name}.key -out ${name}.csr`, '-subj', subject);
  writeFileSync(
    join(dir, `${name}.ext`),
    [
      'basicConstraints=critical,CA:FALSE',
      'subjectKeyIdentifier=hash',
      'authorityKeyIdentifier=keyid',
      ...extensions,
    ].join('\n'),
  );
  openssl(
    dir,
    `x509 -req -in ${name}.csr -CA ${issuer}.pem -CAkey ${issuer}.key -CAcreateserial -days 30 -out ${name}.pem -extfile ${name}.ext`,
  );
  return {
    privateKey: createPrivateKey(readFileSync(join(dir, `${name}.key`))),
    der: Buffer.from(new X509Certificate(readFileSync(join(dir, `${name}.pem`))).raw),
  };
}

export function makeTestPki(dir: string, label = 'Keyplane Test'): TestPki {
  makeRoot(dir, 'root', `${label} MDS Root`);
  const signer = makeLeaf(dir, 'signer', 'root', `/C=US/O=${label}/CN=${label} MDS Signer`, [
    'keyUsage=critical,digitalSignature',
  ]);
  makeRoot(dir, 'attroot', `${label} Attestation Root`);
  const rootPem = readFileSync(join(dir, 'root.pem'), 'utf8');
  const attestationRootDer = Buffer.from(new X509Certificate(readFileSync(join(dir, 'attroot.pem'))).raw);
  const attestations = new Map<string, { privateKey: KeyObject; x5c: Buffer[] }>();
  return {
    dir,
    rootFile: join(dir, 'root.pem'),
    rootPem,
    attestationRootDer,
    attestation(aaguid) {
      let made = attestations.get(aaguid);
      if (!made) {
        // FIDO's id-fido-gen-ce-aaguid extension (1.3.6.1.4.1.45724.1.1.4): an OCTET STRING of the 16 bytes.
        const leaf = makeLeaf(
          dir,
          `att-${aaguid}`,
          'attroot',
          `/C=US/O=${label}/OU=Authenticator Attestation/CN=${label} Authenticator`,
          [`1.3.6.1.4.1.45724.1.1.4=DER:04:10:${aaguid.replace(/-/g, '').match(/../g)!.join(':')}`],
        );
        made = { privateKey: leaf.privateKey, x5c: [leaf.der] };
        attestations.set(aaguid, made);
      }
      return made;
    },
    async blob(entries, no = 1) {
      const payload = {
        legalHeader: 'Test metadata for Keyplane; not the FIDO Alliance',
        no,
        nextUpdate: new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10),
        entries: entries.map((e) => ({
          aaguid: e.aaguid,
          metadataStatement: {
            legalHeader: '',
            aaguid: e.aaguid,
            description: e.description,
            authenticatorVersion: 1,
            protocolFamily: 'fido2',
            schema: 3,
            upv: [{ major: 1, minor: 0 }],
            authenticationAlgorithms: ['secp256r1_ecdsa_sha256_raw'],
            publicKeyAlgAndEncodings: ['cose'],
            attestationTypes: ['basic_full'],
            userVerificationDetails: [[{ userVerificationMethod: 'passcode_internal' }]],
            keyProtection: ['hardware', 'secure_element'],
            matcherProtection: ['on_chip'],
            attachmentHint: ['external'],
            tcDisplay: [],
            attestationRootCertificates: [attestationRootDer.toString('base64')],
          },
          statusReports: (e.statuses ?? ['FIDO_CERTIFIED_L1']).map((status) => ({
            status,
            effectiveDate: '2026-01-01',
          })),
          timeOfLastStatusChange: '2026-01-01',
        })),
      };
      return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
        .setProtectedHeader({ alg: 'ES256', typ: 'JWT', x5c: [signer.der.toString('base64')] })
        .sign(signer.privateKey);
    },
  };
}

/**
 * An account `orgId` manages (as its SCIM would create it) with one passkey of `authenticator`,
 * registered through the real ceremony (`tweaks` shape the attestation).
 */
export async function managedAccountWithPasskey(
  services: RunningServices,
  who: { username: string; orgId: string; label: string },
  authenticator: SoftAuthenticator,
  tweaks: CeremonyTweaks = {},
): Promise<string> {
  const identityId = `usr_${who.username}`;
  const now = services.now();
  await services.storage.identities.create({
    identityId,
    username: who.username,
    displayName: '',
    preferences: {},
    founder: false,
    managedBy: who.orgId,
    createdAt: now,
    updatedAt: now,
  });
  const options = await creationOptions(services, { identityId, username: who.username, displayName: '' }, []);
  const response = authenticator.create(options, tweaks);
  const { clientData, fields } = await readRegistration(response);
  const verified = await verifyRegistration(services, response, clientData, fields, options.challenge);
  await services.storage.credentials.insert(credentialRecord(identityId, verified, who.label, now));
  return identityId;
}
