import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import * as client from 'openid-client';
import type { BrowserContext, Page } from 'playwright-core';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { seedAcmeOwner } from '../../helpers/mail-domains.js';
import { createServer } from 'node:http';
import { ADMIN, CookieJar, register, start } from '../../helpers/openid-client.js';
import { simpleSamlMissing, startSimpleSaml } from '../../helpers/simplesamlphp.js';
import { tempDir } from '../../helpers/build.js';
import { codeBlocksUnder } from '../../helpers/doc-blocks.js';
import { decodeRedirectMessage } from '#lib/saml/bindings.js';
import { parseAuthnRequest } from '#lib/saml/authn-request.js';
import { NAMEID_FORMAT } from '#lib/saml/constants.js';
import { buildSignedResponse, type AssertionInput } from '#lib/saml/response.js';
import { createConnection, updateConnection } from '../../../control-plane/src/federation/connections.js';

/**
 * Signing in through a SAML connection, end to end, against SimpleSAMLphp (Debian's, under PHP's
 * built-in server): a person in Chromium starts at an app of Keyplane's, is offered the org's
 * connection on Keyplane's sign-in page, signs in at SimpleSAMLphp, whose page posts the signed
 * Response to the ACS, continues in their own browser and arrives at the app with `fed`, `idp` and
 * `idp_name`. Then every refusal, each a page naming the reason and a `federation.refused`: the
 * IdP's own answer altered, unsigned, replayed, posted at another connection or into another
 * browser, an IdP-initiated one; and answers signed with the IdP's own key (its certificate is the
 * one in its metadata) for another audience, expired, or for a request never made.
 */
const requireAll = process.env.KEYPLANE_REQUIRE_ALL === '1';
const skip =
  chromiumSkip(t, 'federation SAML suite') ||
  (simpleSamlMissing && !requireAll
    ? 'SimpleSAMLphp not found (apt-get install simplesamlphp php-cli php-xml php-mbstring): federation SAML suite skipped'
    : false);

t.test('SAML connections in Chromium', { skip }, async (t) => {
  const dir = tempDir(t);
  const idp = await startSimpleSaml(dir, {
    ada: { password: 'ada-pw', attributes: { mail: ['ada@acme.example'], displayName: ['Ada Upstream'] } },
    mallory: { password: 'mallory-pw', attributes: { mail: ['mallory@elsewhere.example'] } },
  });
  t.teardown(() => idp.stop());
  const idpKey = {
    privateKeyPem: readFileSync(`${dir}/cert/idp.key`, 'utf8'),
    certificatePem: readFileSync(`${dir}/cert/idp.crt`, 'utf8'),
  };
  const server = await start(t, { fetch: { allowPrivateTargets: true } });
  const base = server.url;
  const { storage } = server.services;
  const admin = { authorization: `Bearer ${ADMIN}` };
  const now = Date.now();
  await seedAcmeOwner(storage, now);
  const owner = { orgId: 'org_acme', actor: { type: 'person' as const, id: 'usr_owner' } };
  const metadataXml = await idp.metadataXml();
  const idpEntityId = /entityID="([^"]+)"/.exec(metadataXml)![1]!;

  // The org's connection, and a second one of the same IdP (another audience, another ACS).
  const add = async (name: string, more: Record<string, unknown>) => {
    const { connection } = await createConnection(server.services, owner, {
      type: 'saml',
      name,
      saml: { metadata_xml: metadataXml },
      ...more,
    });
    const res = await fetch(`${base}/org/acme/connections/${connection.connectionId}`, {
      headers: { cookie: '' },
    });
    t.equal(res.status, 401, 'an org connection is read by its owners only');
    const sp = await fetch(`${base}/federation/${connection.connectionId}/saml/metadata`);
    t.match(sp.headers.get('content-type'), /^application\/samlmetadata\+xml/);
    idp.addServiceProvider(await sp.text());
    return connection.connectionId;
  };
  const connectionId = await add('Acme SAML', { domains: ['acme.example'], jit: { role: 'member' } });
  const otherId = await add('Acme SAML 2', {});
  const acs = `${base}/federation/${connectionId}/saml/acs`;
  const spEntityId = `${base}/federation/${connectionId}/saml/metadata`;

  // The app's callback: a real page on loopback (the redirect arrives at the end of a chain from a
  // cross-site POST, which Playwright's routes do not see), answering without redeeming the code.
  const callbackServer = createServer((_, res) => res.end('app callback'));
  await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => callbackServer.close(resolve)));
  const CALLBACK = `http://localhost:${(callbackServer.address() as { port: number }).port}/callback`;
  const registered = await register(base, {
    token_endpoint_auth_method: 'none',
    first_party: true,
    redirect_uris: [CALLBACK],
  });
  const app = await client.discovery(new URL(base), registered.client_id as string, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });

  const { browser } = await launchChromium(t);
  const contexts: BrowserContext[] = [];
  const newPage = async (): Promise<Page> => {
    const context = await browser.newContext();
    contexts.push(context);
    return context.newPage();
  };
  t.teardown(() => Promise.all(contexts.map((c) => c.close())));

  const receipts = async (type: string) =>
    (
      (await (await fetch(`${base}/admin/receipts?type=${type}`, { headers: admin })).json()) as {
        receipts: Array<Record<string, any>>;
      }
    ).receipts;
  const refusedWith = async (t: Test, page: Page, reason: string, message?: RegExp) => {
    t.equal(await page.getAttribute('code[data-reason]', 'data-reason'), reason, `refused: ${reason}`);
    if (message) t.match(await page.textContent('p.error'), message);
  };

  /** The app asks for sign-in through the connection; the page ends at SimpleSAMLphp's login form. */
  const startAtApp = async (page: Page, id = connectionId) => {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(app, {
      redirect_uri: CALLBACK,
      scope: 'openid email profile',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      connection: id,
    });
    await page.goto(url.href);
    await page.click('#connection-start');
    await page.waitForSelector('input[name="password"]');
    return { verifier, state };
  };
  const logIn = async (page: Page, username: string, password: string) => {
    await page.fill('input[name="username"]', username);
    await page.fill('input[name="password"]', password);
    await page.press('input[name="password"]', 'Enter');
  };
  /** Holds SimpleSAMLphp's post to the ACS: the browser gets a blank page, the test the SAMLResponse. */
  const holdResponse = (page: Page, url = acs) =>
    new Promise<string>((resolve) => {
      void page.route(url, (route) => {
        resolve(new URLSearchParams(route.request().postData() ?? '').get('SAMLResponse')!);
        return route.fulfill({ status: 200, contentType: 'text/plain', body: 'held' });
      });
    });
  /** Posts a SAMLResponse to an ACS from `page` (a form on a blank page, as an IdP's page would). */
  const postResponse = async (page: Page, response: string, to = acs) => {
    await page.goto('about:blank');
    await page.setContent(`<form method="post" action="${to}"><input type="hidden" name="SAMLResponse"></form>`);
    await page.evaluate((value) => {
      const forms = (globalThis as any).document.forms;
      forms[0].elements[0].value = value;
    }, response);
    await Promise.all([page.waitForNavigation(), page.evaluate('document.forms[0].submit()')]);
  };
  const xmlOf = (response: string) => Buffer.from(response, 'base64').toString('utf8');
  const base64 = (xml: string) => Buffer.from(xml).toString('base64');

  /** A sign-in started over HTTP (its browser's cookies in a jar): the AuthnRequest ID it sent upstream. */
  const pendingRequest = async () => {
    const jar = new CookieJar();
    const page = await fetch(`${base}/auth?connection=${connectionId}`);
    jar.absorb(page);
    const href = /href="([^"]*\/start\?request=[^"]+)"/.exec(await page.text())![1]!.replace(/&amp;/g, '&');
    const started = await fetch(new URL(href, base), { headers: { cookie: jar.header() }, redirect: 'manual' });
    const location = new URL(started.headers.get('location')!);
    t.equal(location.origin, idp.base, 'start sends the browser to the IdP');
    const request = parseAuthnRequest(decodeRedirectMessage(location.searchParams.get('SAMLRequest')!));
    return { requestId: request.id, jar, location };
  };
  /** An answer signed with the IdP's own key, as SimpleSAMLphp would send it, with fields changed. */
  const signedByIdp = (over: Partial<AssertionInput>) =>
    base64(
      buildSignedResponse(
        {
          issuer: idpEntityId,
          destination: acs,
          audience: spEntityId,
          nameId: 'ada',
          nameIdFormat: NAMEID_FORMAT.persistent,
          sessionIndex: '_s1',
          authnInstant: Date.now(),
          assurance: 'passkey',
          attributes: { mail: ['ada@acme.example'] },
          now: Date.now(),
          ...over,
        },
        idpKey,
      ),
    );

  let answered: string | undefined;

  await t.test('docs/federation.md: the commands run as written', async (t) => {
    const env = {
      ...process.env,
      ISSUER: base,
      KEYPLANE_ADMIN_TOKEN: ADMIN,
      IDP_METADATA_URL: idp.metadataUrl,
    };
    const block = codeBlocksUnder('docs/federation.md', 'Adding a SAML connection').find((b) => b.lang === 'sh')!;
    const { stdout } = await promisify(execFile)('bash', ['-c', block.text], { env, encoding: 'utf8' });
    const [added, metadata] = stdout.split('\n---\n');
    const body = JSON.parse(added!) as Record<string, any>;
    t.match(body, {
      ok: true,
      connectionId: /^con_/,
      sp_entity_id: /\/saml\/metadata$/,
      acs_url: /\/saml\/acs$/,
      sp_metadata_url: /\/saml\/metadata$/,
    });
    t.match(metadata, `Location="${body.acs_url}"`);
    t.match(metadata, 'AuthnRequestsSigned="true"');
    const res = await fetch(`${base}/admin/connections/${body.connectionId}`, { method: 'DELETE', headers: admin });
    t.equal(res.status, 200);
  });

  await t.test('start sends a signed AuthnRequest for a persistent NameID, bound to the pending sign-in', async (t) => {
    const { location } = await pendingRequest();
    t.ok(location.searchParams.get('Signature'), 'signed on the query');
    const request = parseAuthnRequest(decodeRedirectMessage(location.searchParams.get('SAMLRequest')!));
    t.match(request, { issuer: spEntityId, acsUrl: acs, nameIdFormat: NAMEID_FORMAT.persistent });
    const none = await fetch(`${base}/federation/${connectionId}/start?request=${'x'.repeat(32)}`, {
      redirect: 'manual',
    });
    t.match(none.headers.get('location'), `/auth?connection=${connectionId}`, 'no pending sign-in: the sign-in page');
  });

  await t.test('a first sign-in creates a managed account; the tokens say fed and idp', async (t) => {
    const page = await newPage();
    const { verifier, state } = await startAtApp(page);
    // Kept to be replayed below.
    page.on('request', (request) => {
      if (request.url() === acs) answered = new URLSearchParams(request.postData() ?? '').get('SAMLResponse')!;
    });
    await logIn(page, 'ada', 'ada-pw');
    await page.waitForURL((url) => url.href.startsWith(CALLBACK), { timeout: 20_000 });
    const tokens = await client.authorizationCodeGrant(app, new URL(page.url()), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    const claims = tokens.claims()!;
    t.ok((claims.amr as string[]).includes('fed'), 'amr contains fed');
    t.equal(claims.idp, connectionId);
    t.equal(claims.idp_name, 'Acme SAML');
    t.equal(claims.acr, 'email', 'a federated sign-in reaches email');
    t.equal(claims.email, 'ada@acme.example', 'the address from the mail attribute');
    t.equal(claims.email_verified, true, 'verified: the domain is one the org proved');
    t.equal((await storage.identities.get(claims.sub))?.managedBy, 'org_acme');
    t.equal((await storage.orgs.member('org_acme', claims.sub))?.role, 'member');
    const signIns = await receipts('federation.sign_in');
    t.match(signIns.at(-1), { receipt: { connectionId, actor: { type: 'connection', id: connectionId } } });
    t.notMatch(JSON.stringify(signIns), /"ada"|ada@/, 'opaque ids only');

    // Again, in another browser: the same persistent NameID is the same account.
    const again = await newPage();
    const second = await startAtApp(again);
    await logIn(again, 'ada', 'ada-pw');
    await again.waitForURL((url) => url.href.startsWith(CALLBACK), { timeout: 20_000 });
    const more = await client.authorizationCodeGrant(app, new URL(again.url()), {
      pkceCodeVerifier: second.verifier,
      expectedState: second.state,
    });
    t.equal(more.claims()!.sub, claims.sub, 'the same federated identity is the same account');
    t.equal((await receipts('federation.account_created')).length, 1, 'no second account');
  });

  await t.test('refusals of the IdP’s own answer: replayed, altered, unsigned, for another connection', async (t) => {
    const refusedBefore = (await receipts('federation.refused')).length;
    const page = await newPage();
    await postResponse(page, answered!);
    await refusedWith(t, page, 'upstream_response_invalid', /used already/);
    const xml = xmlOf(answered!);
    await postResponse(page, base64(xml.replaceAll('ada@acme.example', 'ceo@acme.example')));
    await refusedWith(t, page, 'upstream_response_invalid', /signature does not verify/);
    await postResponse(page, base64(xml.replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/g, '')));
    await refusedWith(t, page, 'upstream_response_invalid', /neither the assertion nor the Response is signed/);
    await postResponse(page, answered!, `${base}/federation/${otherId}/saml/acs`);
    await refusedWith(t, page, 'upstream_response_invalid', /Destination|Recipient|audience/);
    const refused = await receipts('federation.refused');
    t.equal(refused.length, refusedBefore + 4, 'each leaves federation.refused');
    t.match(refused.at(-1), { receipt: { outcome: 'failure', reason: 'upstream_response_invalid' } });
  });

  await t.test(
    'answers signed by the IdP’s key: another audience, expired, unknown or used InResponseTo',
    async (t) => {
      const page = await newPage();
      const { requestId } = await pendingRequest();
      await postResponse(
        page,
        signedByIdp({ inResponseTo: requestId, audience: `${base}/federation/${otherId}/saml/metadata` }),
      );
      await refusedWith(t, page, 'upstream_response_invalid', /another audience/);
      await postResponse(page, signedByIdp({ inResponseTo: requestId, now: Date.now() - 10 * 60_000 }));
      await refusedWith(t, page, 'upstream_response_invalid', /expired/);
      await postResponse(page, signedByIdp({ inResponseTo: '_0123456789abcdef0123456789abcdef01234567' }));
      await refusedWith(t, page, 'federation_state_unknown', /InResponseTo/);
      // The right request, once: the first use finds it; a second answer to it finds nothing.
      const jarless = await fetch(acs, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ SAMLResponse: signedByIdp({ inResponseTo: requestId }) }),
        redirect: 'manual',
      });
      t.equal(jarless.status, 303);
      t.match(jarless.headers.get('location'), `/federation/${connectionId}/continue?result=`);
      await postResponse(page, signedByIdp({ inResponseTo: requestId }));
      await refusedWith(t, page, 'federation_state_unknown', /InResponseTo/);
    },
  );

  await t.test('a response posted into another browser stops at continue', async (t) => {
    const victim = await newPage();
    await startAtApp(victim);
    const held = holdResponse(victim);
    await logIn(victim, 'ada', 'ada-pw');
    const response = await held;
    // The attacker's browser posts the victim's answer; its own cookies arrive at continue.
    const attacker = await newPage();
    await postResponse(attacker, response);
    t.match(new URL(attacker.url()).pathname, `/federation/${connectionId}/continue`);
    await refusedWith(t, attacker, 'federation_state_unknown', /another browser/);
    t.equal((await attacker.context().cookies()).filter((c) => c.name.startsWith('kp_session')).length, 0);
  });

  await t.test('an address outside the proved domains is not provisioned', async (t) => {
    const page = await newPage();
    await startAtApp(page);
    await logIn(page, 'mallory', 'mallory-pw');
    await page.waitForURL((url) => url.pathname.endsWith('/continue'));
    await refusedWith(t, page, 'not_provisioned');
  });

  await t.test('IdP-initiated: refused, or with allow_idp_initiated restarted from the sign-in page', async (t) => {
    const page = await newPage();
    await startAtApp(page);
    await logIn(page, 'ada', 'ada-pw');
    await page.waitForURL((url) => url.href.startsWith(CALLBACK), { timeout: 20_000 });
    const unsolicited = `${idp.base}/saml2/idp/SSOService.php?spentityid=${encodeURIComponent(spEntityId)}`;
    await page.goto(unsolicited);
    await page.waitForURL((url) => url.pathname.endsWith('/saml/acs'));
    await refusedWith(t, page, 'federation_state_unknown', /IdP-initiated/);
    await updateConnection(server.services, owner, connectionId, { saml: { allow_idp_initiated: true } });
    await page.goto(unsolicited);
    await page.waitForURL((url) => url.pathname === '/auth');
    t.equal(await page.getAttribute('#connection-start', 'data-connection'), connectionId, 'SP-initiated again');
  });

  await t.test('signing out here signs out at the IdP too (SAML Single Logout)', async (t) => {
    const page = await newPage();
    await startAtApp(page);
    await logIn(page, 'ada', 'ada-pw');
    await page.waitForURL((url) => url.href.startsWith(CALLBACK), { timeout: 20_000 });
    await page.goto(`${base}/account`);
    const answer = (await page.evaluate("fetch('/auth/signout', { method: 'POST' }).then((r) => r.json())")) as {
      ok: boolean;
      upstream_logout?: string;
    };
    t.equal(answer.ok, true);
    const logout = new URL(answer.upstream_logout!);
    t.equal(`${logout.origin}${logout.pathname}`, `${idp.base}/saml2/idp/SingleLogoutService.php`);
    t.ok(logout.searchParams.get('Signature'), 'the LogoutRequest is signed');
    await page.goto(logout.href);
    await page.waitForURL((url) => url.origin === base && url.pathname === '/auth');
    t.equal(new URL(page.url()).searchParams.get('done'), 'signed-out', 'back here, signed out');
    t.equal(await (await page.request.get(`${base}/account?format=json`)).status(), 401);
    // Signed out at the IdP: the next sign-in asks for the password again.
    await startAtApp(page);
    t.ok(await page.isVisible('input[name="password"]'), "the IdP's login form again");
  });

  await t.test('an owner tests the connection: the claims are shown, and nothing is created', async (t) => {
    const page = await newPage();
    const { verifier, state } = await startAtApp(page);
    await logIn(page, 'ada', 'ada-pw');
    await page.waitForURL((url) => url.href.startsWith(CALLBACK), { timeout: 20_000 });
    const ada = (
      await client.authorizationCodeGrant(app, new URL(page.url()), {
        pkceCodeVerifier: verifier,
        expectedState: state,
      })
    ).claims()!.sub;
    await storage.orgs.setRole('org_acme', ada, 'owner');
    const signIns = (await receipts('federation.sign_in')).length;
    // This browser is signed in at the IdP already: it answers at once.
    await page.goto(`${base}/org/acme/connections/${connectionId}/test`);
    await page.waitForSelector('#tested-claims');
    t.match(await page.textContent('#tested-claims'), '"ada@acme.example"', 'the claims received');
    t.equal((await receipts('federation.sign_in')).length, signIns, 'no sign-in');
    t.match(await receipts('federation.tested'), [{ receipt: { connectionId, actor: { type: 'person', id: ada } } }]);
  });
});
