import t from 'tap';
import { tempDir } from '../../helpers/build.js';
import { makeTestPki } from '../../helpers/fido-metadata.js';
import { FIDO_MDS_ROOTS, verifyMetadataBlob } from '#lib/webauthn/verify-metadata-blob.js';

const KEY = '2fc0579f-8113-47ea-b116-bb5a8db9202a';
const GONE = 'ee882879-721c-4913-9775-3dfcce97072a';
const LEAKED = 'cb69481e-8ff7-4039-93ec-0a2729a154a8';

t.test('verifies a BLOB signed under the configured root and reads each entry with its status', async (t) => {
  const pki = makeTestPki(tempDir(t));
  const blob = await pki.blob(
    [
      { aaguid: KEY, description: 'Test Key' },
      { aaguid: GONE, description: 'Gone Key', statuses: ['FIDO_CERTIFIED_L1', 'REVOKED'] },
      { aaguid: LEAKED, description: 'Leaked Key', statuses: ['ATTESTATION_KEY_COMPROMISE'] },
    ],
    7,
  );
  const verified = await verifyMetadataBlob(blob, [pki.rootPem]);
  t.equal(verified.no, 7);
  t.equal(verified.statements.length, 3, 'the statements SimpleWebAuthn checks attestations with');
  t.match(verified.entries.get(KEY), { description: 'Test Key', refusal: null });
  t.match(verified.entries.get(GONE), { refusal: 'revoked', statuses: ['FIDO_CERTIFIED_L1', 'REVOKED'] });
  t.match(verified.entries.get(LEAKED), { refusal: 'compromised' });
});

t.test('refuses a BLOB whose chain ends at another root, the FIDO roots included', async (t) => {
  const pki = makeTestPki(tempDir(t));
  const other = makeTestPki(tempDir(t), 'Other');
  const blob = await pki.blob([{ aaguid: KEY, description: 'Test Key' }]);
  await t.rejects(verifyMetadataBlob(blob, [other.rootPem]), /certificate path could not be validated/);
  t.equal(FIDO_MDS_ROOTS.length >= 1, true, 'SimpleWebAuthn bundles the FIDO roots');
  await t.rejects(verifyMetadataBlob(blob), /certificate path could not be validated/);
});

t.test('refuses a BLOB whose payload was changed after signing', async (t) => {
  const pki = makeTestPki(tempDir(t));
  const blob = await pki.blob([{ aaguid: KEY, description: 'Test Key', statuses: ['REVOKED'] }]);
  const [header, payload, signature] = blob.split('.');
  const changed = Buffer.from(payload!, 'base64url').toString('utf8').replace('REVOKED', 'FIDO_CERTIFIED');
  await t.rejects(
    verifyMetadataBlob(`${header}.${Buffer.from(changed).toString('base64url')}.${signature}`, [pki.rootPem]),
    /signature could not be verified|does not verify/,
  );
  await t.rejects(verifyMetadataBlob('not a jwt', [pki.rootPem]), /does not verify/);
});
