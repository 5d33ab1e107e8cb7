import t from 'tap';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { seriousViolations } from '../../helpers/axe.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';
import { createServer } from 'node:net';
import { seedAcmeOwner, seedProvedMailDomain } from '../../helpers/mail-domains.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { linkIn, readOutbox } from '../../helpers/smtp.js';

/**
 * A directory provisions an account over SCIM; the mailed enrolment link, opened in Chromium with
 * a platform authenticator, creates the account's passkey and signs it in; the link then works no more.
 * The org's passkey policy holds there too: an authenticator it denies is refused, named on the page.
 */
const skip = chromiumSkip(t, 'browser SCIM enrolment suite');
/** The AAGUID Chromium's virtual authenticator attests. */
const VIRTUAL_AAGUID = '01020304-0506-0708-0102-030405060708';

t.test(
  'a provisioned person creates a passkey from the mailed link and is signed in',
  { skip, timeout: 120_000 },
  async (t) => {
    const dataDir = tempDir(t);
    const config = loadControlPlaneConfig({
      env: {},
      overrides: { dataDir, host: '127.0.0.1', port: 0, masterKey: TEST_MASTER_KEY, logLevel: 'warn' },
    });
    const server: RunningControlPlane = await startControlPlane(config, {
      logStream: new Writable({
        write(_c, _e, done) {
          done();
        },
      }),
    });
    t.teardown(() => server.close());
    const { storage } = server.services;

    // The org, its proved mail domain and a SCIM token, as an owner at `sensitive` leaves them.
    const now = Date.now();
    await seedAcmeOwner(storage, now);
    const tokenId = 'sct_AAAAAAAAAAAAAAAAAAAAAA';
    const secret = 'B'.repeat(43);
    await storage.scim.addToken({
      tokenId,
      orgId: 'org_acme',
      secretHash: sha256Hex(secret),
      createdBy: 'usr_owner',
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
    });

    const made = await fetch(`${server.url}/scim/v2/orgs/acme/Users`, {
      method: 'POST',
      headers: { authorization: `Bearer kpscim_${tokenId}.${secret}`, 'content-type': 'application/scim+json' },
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: 'ann@acme.example',
        displayName: 'Ann Lee',
        emails: [{ type: 'work', value: 'ann@acme.example', primary: true }],
      }),
    });
    t.equal(made.status, 201);
    const { id } = (await made.json()) as { id: string };
    await server.services.mailer.idle();
    const mail = (await readOutbox(dataDir)).find((m) => m.includes('To: ann@acme.example'));
    const link = mail && linkIn(mail, '/auth/enrol');
    t.ok(link, 'the enrolment link was mailed');

    const { browser, page, problems, addAuthenticator } = await launchChromium(t, {
      expectedFailures: ['/auth/enrol'],
    });
    // The page and its refusal meet WCAG 2.2 AA in a left-to-right and a right-to-left language
    // (bypassCSP for this audit context only: axe is injected as a script without the page's nonce).
    const audit = await browser.newContext({ bypassCSP: true });
    const auditPage = await audit.newPage();
    for (const lang of ['en', 'ar']) {
      await auditPage.goto(`${link!}&lang=${lang}`);
      t.same(await seriousViolations(auditPage), [], `the enrolment page in ${lang}`);
    }
    await audit.close();
    await addAuthenticator();
    await page.goto(link!);
    t.match(await page.locator('h1').textContent(), /Create your passkey/);
    t.match(await page.locator('main').textContent(), /Acme/);

    // The org's passkey policy holds for the link (docs/passkeys.md#org-policy): the virtual
    // authenticator's AAGUID denied, the page says which authenticator and why; the link stays usable.
    const policy = (aaguidsDenied: string[]) =>
      storage.orgs.putPasskeyPolicy({
        orgId: 'org_acme',
        aaguidsAllowed: [],
        aaguidsDenied,
        attestation: 'none',
        effectiveAt: Date.now(),
        graceUntil: Date.now(),
        updatedBy: 'usr_owner',
      });
    await policy([VIRTUAL_AAGUID]);
    await page.click('button[data-action="enrol"]');
    await page.waitForFunction(
      () => /not allowed/.test((globalThis as any).document.getElementById('status')?.textContent ?? ''),
      undefined,
      { timeout: 15_000 },
    );
    t.match(await page.locator('#status').textContent(), VIRTUAL_AAGUID, 'the refusal names the authenticator');
    t.equal((await storage.credentials.listByIdentity(id)).length, 0, 'no passkey was stored');
    t.equal(new URL(page.url()).pathname, '/auth/enrol', 'not signed in');
    await policy([]);
    await page.goto(link!);
    await page.click('button[data-action="enrol"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 }).catch(() => t.fail(problems.join('\n')));
    t.match(await page.locator('main').textContent(), /Ann Lee/, 'signed in as the provisioned account');
    t.equal((await storage.credentials.listByIdentity(id)).length, 1, 'the passkey belongs to the provisioned account');

    await page.goto(link!);
    t.match(await page.locator('main').textContent(), /link_used/, 'the link works once');
  },
);

t.test(
  "an org owner sends a new passkey link from the org page's member list; the old link stops working",
  { skip, timeout: 120_000 },
  async (t) => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const base = `http://localhost:${port}`;
    const { app, services, signIn, config } = await buildSignedIn(t, { config: { issuer: base } });
    await app.listen({ port, host: '127.0.0.1' });
    const owner = await signIn({ username: 'olivia', assurance: 'sensitive' });
    t.equal((await owner.browser.post('/auth/orgs/create', { name: 'Acme' }, { origin: base })).statusCode, 200);
    const org = (await services.storage.orgs.getBySlug('acme'))!;
    await seedProvedMailDomain(services.storage, org.orgId, 'acme.example', services.now());
    const scimToken = (await owner.browser.post('/org/acme/scim-tokens', {}, { origin: base })).json().token as string;
    const made = await app.inject({
      method: 'POST',
      url: '/scim/v2/orgs/acme/Users',
      headers: { authorization: `Bearer ${scimToken}`, 'content-type': 'application/scim+json' },
      payload: JSON.stringify({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: 'bo@acme.example',
        emails: [{ type: 'work', value: 'bo@acme.example' }],
      }),
    });
    t.equal(made.statusCode, 201, made.body);
    const { id } = made.json() as { id: string };
    const links = async () => {
      await services.mailer.idle();
      return (await readOutbox(config.dataDir))
        .filter((m) => m.includes('To: bo@acme.example'))
        .map((m) => linkIn(m, '/auth/enrol')!);
    };
    const [first] = await links();

    const { context, page, problems } = await launchChromium(t, { expectedFailures: ['/auth/enrol'] });
    await context.addCookies([...owner.browser.cookies].map(([name, value]) => ({ name, value, url: base })));
    await page.goto(`${base}/org/acme`);
    const row = page.locator(`li[data-member="${id}"]`);
    t.equal(await row.locator('[data-enrolment]').getAttribute('data-enrolment'), 'live');
    await row.locator('button[data-action="send-enrolment"]').click();
    await page.waitForLoadState('load');
    await t.resolves(
      (async () => {
        for (let i = 0; i < 100 && (await links()).length < 2; i++) await new Promise((r) => setTimeout(r, 100));
      })(),
    );
    const after = await links();
    t.equal(after.length, 2, `a second link was mailed ${problems.join('\n')}`);
    t.equal(await page.locator(`li[data-member="${id}"] [data-enrolment]`).getAttribute('data-enrolment'), 'live');
    const newest = after.find((link) => link !== first)!;
    await page.goto(first!);
    t.match(await page.locator('main').textContent(), /link_invalid/, 'the old link no longer works');
    await page.goto(newest);
    t.equal(await page.locator('button[data-action="enrol"]').count(), 1, 'the new link opens the enrolment page');
  },
);
