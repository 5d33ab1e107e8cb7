import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';
import { makeTestPki, managedAccountWithPasskey } from '../../helpers/fido-metadata.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';

/**
 * An org's passkey policy in Chromium (docs/passkeys.md#org-policy): the owner previews and saves it
 * on the org page as the page sends it; a managed member whose passkey it refuses is asked on the
 * account page to replace it, and the CDP virtual authenticator's passkey (self attestation) is
 * refused, said in the member's language with the authenticator named.
 */
declare const document: { getElementById(id: string): { textContent: string | null } | null };

const skip = chromiumSkip(t, 'browser passkey policy suite');
/** The AAGUID Chromium's virtual authenticator attests. */
const VIRTUAL_AAGUID = '01020304-0506-0708-0102-030405060708';
const TEST_KEY = '2fc0579f-8113-47ea-b116-bb5a8db9202a';

t.test(
  'an owner previews and saves a policy; a managed member is refused a passkey without attestation',
  { skip, timeout: 150_000 },
  async (t) => {
    const dir = tempDir(t);
    const pki = makeTestPki(dir);
    const blobFile = join(dir, 'blob.jwt');
    writeFileSync(blobFile, await pki.blob([{ aaguid: TEST_KEY, description: 'Test Key' }]));
    const config = loadControlPlaneConfig({
      env: {},
      overrides: {
        dataDir: tempDir(t),
        host: '127.0.0.1',
        port: 0,
        masterKey: TEST_MASTER_KEY,
        logLevel: 'warn',
        passkeys: { mds: { file: blobFile, rootCertificateFile: pki.rootFile } },
      },
    });
    const server: RunningControlPlane = await startControlPlane(config, {
      logStream: new Writable({
        write(_c, _e, done) {
          done();
        },
      }),
    });
    t.teardown(() => server.close());
    const { services } = server;

    // The owner signs up with the virtual authenticator, creates the org and steps up.
    const owner = await launchChromium(t, { expectedFailures: ['/org/acme/passkey-policy'] });
    await owner.addAuthenticator();
    await owner.page.goto(`${server.url}/auth`);
    await owner.page.fill('input[name="username"]', 'ada');
    await owner.page.click('button[data-action="signup"]');
    await owner.page.waitForURL(`${server.url}/account`, { timeout: 20_000 });
    await owner.page.fill('#org-name', 'Acme');
    await owner.page.click('button[data-action="create-org"]');
    await owner.page.waitForURL(`${server.url}/org/acme`, { timeout: 20_000 });
    const org = (await services.storage.orgs.getBySlug('acme'))!;

    // A member the org manages, whose passkey (no attestation) lives in a second browser's virtual authenticator.
    const soft = new SoftAuthenticator(new URL(server.url).origin);
    await managedAccountWithPasskey(services, { username: 'mia', orgId: org.orgId, label: 'Laptop' }, soft);
    const member = await launchChromium(t, { expectedFailures: ['/auth/passkeys/add-verify'] });
    const authenticatorId = await member.addAuthenticator();
    const credential = soft.credentials[0]!;
    await member.cdp.send('WebAuthn.addCredential', {
      authenticatorId,
      credential: {
        credentialId: Buffer.from(credential.id, 'base64url').toString('base64'),
        isResidentCredential: true,
        rpId: credential.rpId,
        privateKey: credential.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
        userHandle: Buffer.from('usr_mia').toString('base64'),
        signCount: 1,
      },
    });

    // The owner previews a policy that requires attestation on the org page: the form says what it would refuse.
    await owner.page.goto(`${server.url}/org/acme`);
    await owner.page.selectOption('#pp-attestation', 'required');
    await owner.page.fill('#pp-denied', VIRTUAL_AAGUID);
    await owner.page.fill('#pp-grace', '7');
    await owner.page.click('button[data-action="preview-passkey-policy"]');
    await owner.page.waitForFunction(
      () => /would refuse 1 of the 1/.test(document.getElementById('passkey-policy-preview')?.textContent ?? ''),
      undefined,
      { timeout: 10_000 },
    );
    t.match(await owner.page.textContent('#passkey-policy-preview'), 'keep working for 7 days', 'the preview');
    t.equal(await services.storage.orgs.passkeyPolicy(org.orgId), null, 'a preview sets nothing');

    // Saving needs a step-up: the form says so; after one, it saves.
    await owner.page.click('button[data-action="save-passkey-policy"]');
    await owner.page.waitForFunction(
      () => /sensitive|step up/i.test(document.getElementById('form-status')?.textContent ?? ''),
      undefined,
      { timeout: 10_000 },
    );
    await owner.page.goto(`${server.url}/auth/step-up?return=/org/acme`);
    await owner.page.click('button[data-action="step-up"]');
    await owner.page.waitForURL(`${server.url}/org/acme`, { timeout: 20_000 });
    await owner.page.selectOption('#pp-attestation', 'required');
    await owner.page.fill('#pp-denied', VIRTUAL_AAGUID);
    await owner.page.fill('#pp-grace', '7');
    await Promise.all([
      owner.page.waitForEvent('load', { timeout: 10_000 }),
      owner.page.click('button[data-action="save-passkey-policy"]'),
    ]);
    t.match(await services.storage.orgs.passkeyPolicy(org.orgId), {
      attestation: 'required',
      aaguidsDenied: [VIRTUAL_AAGUID],
      aaguidsAllowed: [],
    });
    t.match(
      await owner.page.textContent('[data-field="passkey-policy-state"]'),
      /refuses 1 of the 1 existing passkeys/,
    );
    t.equal(await owner.page.inputValue('#pp-denied'), VIRTUAL_AAGUID, 'the form shows the policy in effect');

    // The member signs in with the refused passkey (its grace runs) and is asked, in German, to replace it.
    await member.page.goto(`${server.url}/auth?lang=de`);
    await member.page.click('button[data-action="signin"]');
    await member.page.waitForURL(/\/account/, { timeout: 20_000 });
    t.match(await member.page.textContent('#passkey-replace'), /Laptop/, 'the re-enrolment prompt names the passkey');
    t.match(await member.page.textContent('#passkey-replace'), /erlaubt .* nicht mehr/);

    // The virtual authenticator answers `direct` with self attestation: refused, the authenticator named.
    // (Without the old passkey, which the options exclude: the authenticator would refuse to make a second.)
    await member.cdp.send('WebAuthn.removeCredential', {
      authenticatorId,
      credentialId: Buffer.from(credential.id, 'base64url').toString('base64'),
    });
    await member.page.click('#passkey-replace button[data-action="add-passkey"]');
    await member.page
      .waitForFunction(() => /nicht zugelassen/.test(document.getElementById('status')?.textContent ?? ''), undefined, {
        timeout: 15_000,
      })
      .catch(async (error: unknown) => {
        throw new Error(
          `${String(error)}; status: ${await member.page.textContent('#status')}; ${member.problems.join(', ')}`,
        );
      });
    const said = (await member.page.textContent('#status')) ?? '';
    t.match(said, VIRTUAL_AAGUID, `the refusal names the authenticator: ${said}`);
    t.match(said, /Richtlinie Ihrer Organisation verbietet/, 'and why (denied), in German');
    t.equal((await services.storage.credentials.listByIdentity('usr_mia')).length, 1, 'no passkey was added');
    t.same(owner.problems, [], 'no page errors on the org page');
    t.same(member.problems, [], 'nor on the account page');
  },
);
