import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir } from '../../helpers/build.js';
import { LIVE_ADMIN, startLiveControlPlane } from '../../helpers/live-browser.js';
import { mellonMissing, startMellon } from '../../helpers/mellon.js';
import { create } from 'xmlbuilder2';
import { signRedirectQuery } from '#lib/saml/bindings.js';
import { generateSamlKey } from '#lib/saml/certificate.js';
import { NAMEID_FORMAT, NS } from '#lib/saml/constants.js';
import { newSamlId } from '#lib/saml/response.js';
import { createOrg } from '../../../control-plane/src/orgs/membership.js';

/**
 * A real SAML service provider from Debian: Apache with mod_auth_mellon, registered in
 * Keyplane from its own metadata, and a headless Chromium that signs up with a virtual
 * authenticator, lands on a mellon-protected page that echoes the NameID and the assurance
 * attribute, and signs out through mellon's single logout. The Response the browser carried
 * is also checked with xmlsec1 against the IdP certificate from the metadata.
 */
const REQUIRE_ALL = process.env.KEYPLANE_REQUIRE_ALL === '1';
const browserSkip = chromiumSkip(t, 'SAML mellon suite');
const skip = browserSkip || (mellonMissing && !REQUIRE_ALL ? 'apache2 with mod_auth_mellon is not installed' : false);

t.test('mod_auth_mellon signs in through Keyplane in Chromium', { skip, timeout: 240_000 }, async (t) => {
  const server = await startLiveControlPlane(t);
  const metadata = await (await fetch(`${server.url}/saml/metadata`)).text();
  const mellon = await startMellon({
    dir: tempDir(t, 'keyplane-mellon-'),
    idpMetadata: metadata,
    attributes: { 'urn:keyplane:attribute:assurance': 'assurance', 'urn:keyplane:attribute:username': 'username' },
  });
  t.teardown(() => mellon.stop());

  const registered = await fetch(`${server.url}/saml/providers`, {
    method: 'POST',
    headers: { authorization: `Bearer ${LIVE_ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      entity_id: mellon.entityId,
      acs_urls: [mellon.acsUrl],
      slo_url: mellon.sloUrl,
      certificate: mellon.certificatePem,
      name: 'Apache mellon',
    }),
  });
  t.equal(registered.status, 201, registered.status === 201 ? 'registered' : await registered.clone().text());

  const { page, problems, addAuthenticator, context } = await launchChromium(t, { traceResponses: true });
  await addAuthenticator();
  let posted: string | undefined;
  page.on('request', (request) => {
    if (request.method() === 'POST' && request.url() === mellon.acsUrl)
      posted = new URLSearchParams(request.postData() ?? '').get('SAMLResponse') ?? undefined;
  });
  const diagnose = () =>
    `at ${page.url()} | ${problems.slice(-12).join(' | ')} | mellon: ${mellon.errorLog().slice(-1500)}`;

  await t.test('SP-initiated: mellon → Keyplane sign-up → auto-posted Response → the protected page', async (t) => {
    await page.goto(`${mellon.url}/protected/echo`);
    await page
      .waitForURL((url) => url.pathname === '/auth', { timeout: 30_000 })
      .catch((error) => {
        throw new Error(`not at sign-in: ${diagnose()} ${error}`);
      });
    await page.fill('input[name="username"]', 'melly');
    await page.click('button[data-action="signup"]');
    await page
      .waitForURL((url) => url.href.startsWith(`${mellon.url}/protected/echo`), { timeout: 60_000 })
      .catch((error) => {
        throw new Error(`not back at mellon: ${diagnose()} ${error}`);
      });
    const text = (await page.textContent('body')) ?? '';
    t.match(text, /NAME_ID=usr_[A-Za-z0-9_-]+/, 'mellon read the persistent NameID (the sub)');
    t.match(text, /ASSURANCE=passkey/, 'and the assurance attribute');
    t.match(text, /USERNAME=melly/);
    t.match(text, /REMOTE_USER=usr_/);
  });

  await t.test(
    'the Response the browser carried verifies with xmlsec1 against the metadata certificate',
    { skip: existsSync('/usr/bin/xmlsec1') ? false : 'xmlsec1 missing' },
    async (t) => {
      t.ok(posted, 'the browser posted a SAMLResponse to the ACS URL');
      const dir = tempDir(t, 'keyplane-xmlsec-');
      const cert = /<ds:X509Certificate>([^<]+)<\/ds:X509Certificate>/.exec(metadata)![1]!;
      writeFileSync(
        join(dir, 'idp.crt'),
        `-----BEGIN CERTIFICATE-----\n${cert.replace(/(.{64})/g, '$1\n').trim()}\n-----END CERTIFICATE-----\n`,
      );
      writeFileSync(join(dir, 'response.xml'), Buffer.from(posted!, 'base64'));
      for (const xpath of [
        "/*[local-name()='Response']/*[local-name()='Signature']",
        "//*[local-name()='Assertion']/*[local-name()='Signature']",
      ]) {
        t.doesNotThrow(
          () =>
            execFileSync(
              'xmlsec1',
              [
                '--verify',
                '--pubkey-cert-pem',
                join(dir, 'idp.crt'),
                '--id-attr:ID',
                'urn:oasis:names:tc:SAML:2.0:protocol:Response',
                '--id-attr:ID',
                'urn:oasis:names:tc:SAML:2.0:assertion:Assertion',
                '--node-xpath',
                xpath,
                join(dir, 'response.xml'),
              ],
              { stdio: 'pipe' },
            ),
          xpath,
        );
      }
    },
  );

  // Issue 29, finding 1: a provider an org owns gets nothing until the account approves it.
  await t.test(
    "an org's mellon: the approval page names it and its attributes; nothing is posted until Continue",
    async (t) => {
      const orgMellon = await startMellon({
        dir: tempDir(t, 'keyplane-mellon-org-'),
        idpMetadata: metadata,
        attributes: { 'urn:keyplane:attribute:username': 'username' },
        cookieVariable: 'orgwiki',
      });
      t.teardown(() => orgMellon.stop());
      const melly = await server.services.storage.identities.findByUsername('melly');
      const { org } = await createOrg(server.services, melly!.identityId, { name: 'Wiki Team' });
      const orgRegistered = await fetch(`${server.url}/saml/providers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${LIVE_ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          entity_id: orgMellon.entityId,
          acs_urls: [orgMellon.acsUrl],
          slo_url: orgMellon.sloUrl,
          certificate: orgMellon.certificatePem,
          name: 'Team wiki',
          attributes: { 'urn:keyplane:attribute:username': 'username' },
          org: org.slug,
        }),
      });
      t.equal(orgRegistered.status, 201, orgRegistered.status === 201 ? 'registered' : await orgRegistered.text());
      let postedToOrg = false;
      page.on('request', (request) => {
        if (request.method() === 'POST' && request.url() === orgMellon.acsUrl) postedToOrg = true;
      });
      await page.goto(`${orgMellon.url}/protected/echo`);
      await page.waitForSelector('form[data-action="continue"]', { timeout: 30_000 }).catch((error) => {
        throw new Error(`no approval page: ${diagnose()} ${error}`);
      });
      t.equal(new URL(page.url()).origin + new URL(page.url()).pathname, `${server.url}/saml/sso`, 'on Keyplane');
      const text = (await page.textContent('body')) ?? '';
      t.match(text, /Continue to Team wiki\?/, 'names the provider');
      t.match(text, /See your username \(sent as urn:keyplane:attribute:username\)/, 'and what it receives');
      t.notOk(postedToOrg, 'nothing posted before Continue');
      await page.click('button[value="allow"]');
      await page
        .waitForURL((url) => url.href.startsWith(`${orgMellon.url}/protected/echo`), { timeout: 60_000 })
        .catch((error) => {
          throw new Error(`not at the org's mellon: ${diagnose()} ${orgMellon.errorLog().slice(-1500)} ${error}`);
        });
      t.match((await page.textContent('body')) ?? '', /USERNAME=melly/, 'mellon read the approved assertion');
      const approvals = (await server.services.storage.oidc.approvedClients(melly!.identityId)).filter((id) =>
        id.startsWith('sp_'),
      );
      t.equal(approvals.length, 1, 'the approval is remembered for the account page');
    },
  );

  // Issue 29, finding 5: a provider that never got an assertion in this session cannot end it.
  await t.test("another provider's signed LogoutRequest naming the account ends nothing", async (t) => {
    const attacker = await generateSamlKey({
      commonName: 'Mallory SP',
      now: Date.now(),
      validDays: 2,
      modulusLength: 2048,
    });
    const melly = await server.services.storage.identities.findByUsername('melly');
    const { org } = await createOrg(server.services, melly!.identityId, { name: 'Mallory' });
    const entityId = 'https://mallory.example/sp';
    const evil = await fetch(`${server.url}/saml/providers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${LIVE_ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        entity_id: entityId,
        acs_urls: ['https://mallory.example/acs'],
        certificate: attacker.certificatePem,
        org: org.slug,
      }),
    });
    t.equal(evil.status, 201);
    const root = create().ele(NS.protocol, 'samlp:LogoutRequest', {
      ID: newSamlId(),
      Version: '2.0',
      IssueInstant: new Date().toISOString(),
      Destination: `${server.url}/saml/slo`,
    });
    root.ele(NS.assertion, 'saml:Issuer').txt(entityId);
    root.ele(NS.assertion, 'saml:NameID', { Format: NAMEID_FORMAT.persistent }).txt(melly!.identityId);
    root.ele(NS.protocol, 'samlp:SessionIndex').txt('_0123456789abcdef0123456789abcdef01234567');
    const query = signRedirectQuery('SAMLRequest', root.end({ headless: true }), undefined, attacker.privateKeyPem);
    await page.goto(`${server.url}/saml/slo?${query}`);
    t.match((await page.textContent('body')) ?? '', /no matching Keyplane session/, 'nothing ended');
    const cookies = await context.cookies(server.url);
    t.ok(
      cookies.some((c) => /kp_session/.test(c.name) && c.value),
      'the Keyplane session cookie stays',
    );
    await page.goto(`${server.url}/account`);
    t.equal(new URL(page.url()).pathname, '/account', 'still signed in');
  });

  await t.test('single logout through mellon ends the Keyplane session', async (t) => {
    await page.goto(`${mellon.url}/mellon/logout?ReturnTo=${encodeURIComponent(`${mellon.url}/protected/echo`)}`);
    // Back at mellon, signed out there too: the protected page sends the browser to sign in again.
    await page
      .waitForURL((url) => url.pathname === '/auth', { timeout: 60_000 })
      .catch((error) => {
        throw new Error(`not signed out: ${diagnose()} ${error}`);
      });
    const cookies = await context.cookies(server.url);
    t.notOk(
      cookies.some((c) => /kp_session/.test(c.name) && c.value),
      'the Keyplane session cookie is gone',
    );
  });
});
