import t, { type Test } from 'tap';
import * as client from 'openid-client';
import type { BrowserContext, Page } from 'playwright-core';
import { chromiumSkip, launchChromium, PLATFORM_AUTHENTICATOR, withoutAutofill } from '../../helpers/browser.js';
import { seedAcmeOwner } from '../../helpers/mail-domains.js';
import { ADMIN, CALLBACK, register, start } from '../../helpers/openid-client.js';
import { startUpstreamOidc } from '../../helpers/upstream-oidc.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createConnection, updateConnection } from '../../../control-plane/src/federation/connections.js';
import type { BrowserContext as Context } from 'playwright-core';
import { codeBlocksUnder } from '../../helpers/doc-blocks.js';
import { sha256Hex } from '#lib/crypto/sha256.js';

/**
 * Signing in through an OIDC connection, end to end: a person in Chromium starts at an app of
 * Keyplane's (openid-client), is offered the org's connection on Keyplane's sign-in page, signs in
 * at node-oidc-provider (its own login and consent pages), comes back, and the app's tokens say
 * `fed`, `idp` and `idp_name`. Then every refusal: not provisioned, the upstream's error=, a
 * missing or replayed state, and an answer carried into another browser. One browser and one
 * upstream for the file.
 */
const skip = chromiumSkip(t, 'federation OIDC suite');
// Two dozen upstream round trips in Chromium: past the 120 s of .taprc on a loaded machine.
t.setTimeout(300_000);
const UPSTREAM_SECRET = 'upstream-client-secret-0123456789';

t.test('OIDC connections in Chromium', { skip, timeout: 300_000 }, async (t) => {
  const upstream = await startUpstreamOidc(t);
  const server = await start(t, { fetch: { allowPrivateTargets: true, caFile: upstream.tls.caFile } });
  const base = server.url;
  const { storage } = server.services;
  const admin = { authorization: `Bearer ${ADMIN}` };

  // An org with a proved mail domain (its own suite proves it by DNS TXT) and its owner.
  const now = Date.now();
  await seedAcmeOwner(storage, now);
  const { connection } = await createConnection(
    server.services,
    { orgId: 'org_acme', actor: { type: 'person', id: 'usr_owner' } },
    {
      type: 'oidc',
      name: 'Acme SSO',
      oidc: { issuer: upstream.issuer, client_id: 'keyplane', client_secret: UPSTREAM_SECRET },
      domains: ['acme.example'],
      jit: { role: 'member' },
    },
  );
  const connectionId = connection.connectionId;
  const redirectUri = `${base}/federation/${connectionId}/callback`;
  upstream.addClient({
    client_id: 'keyplane',
    client_secret: UPSTREAM_SECRET,
    redirect_uris: [redirectUri],
    token_endpoint_auth_method: 'client_secret_basic',
  });

  // The app: a public client of Keyplane's, through openid-client.
  const registered = await register(base, { token_endpoint_auth_method: 'none', first_party: true });
  const app = await client.discovery(new URL(base), registered.client_id as string, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });

  const { browser } = await launchChromium(t);
  const contexts: BrowserContext[] = [];
  const newPage = async (): Promise<Page> => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    contexts.push(context);
    const page = await context.newPage();
    // The app's callback: answered here, so the code stays unused for the app to redeem.
    await page.route(`${CALLBACK}**`, (route) => route.fulfill({ status: 200, body: 'app callback' }));
    return page;
  };
  t.teardown(() => Promise.all(contexts.map((c) => c.close())));

  /** The app asks Keyplane for sign-in through the connection; the page ends at the upstream's login form. */
  const startAtApp = async (page: Page) => {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(app, {
      redirect_uri: CALLBACK,
      scope: 'openid email profile',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      connection: connectionId,
    });
    await page.goto(url.href);
    t.match(new URL(page.url()).pathname, '/auth', "Keyplane's sign-in page");
    await page.click('#connection-start');
    await page.waitForSelector('input[name="login"]');
    return { verifier, state };
  };
  const logInUpstream = async (page: Page, login: string) => {
    await page.fill('input[name="login"]', login);
    await page.fill('input[name="password"]', 'any');
    await page.click('button[type="submit"]');
    // node-oidc-provider's consent page, the first time this account meets this client.
    await page.waitForLoadState();
    if (new URL(page.url()).origin === upstream.issuer) await page.click('button[type="submit"]');
  };
  const receipts = async (type: string) =>
    (
      (await (await fetch(`${base}/admin/receipts?type=${type}`, { headers: admin })).json()) as {
        receipts: Array<Record<string, any>>;
      }
    ).receipts;

  await t.test('docs/federation.md: the commands run as written', async (t) => {
    const env = { ...process.env, ISSUER: base, KEYPLANE_ADMIN_TOKEN: ADMIN, UPSTREAM_ISSUER: upstream.issuer };
    // Asynchronously: the control plane answering curl runs in this process.
    const run = async (heading: string) => {
      const block = codeBlocksUnder('docs/federation.md', heading).find((b) => b.lang === 'sh')!;
      const { stdout } = await promisify(execFile)('bash', ['-c', block.text], { env, encoding: 'utf8' });
      return JSON.parse(stdout) as Record<string, any>;
    };
    const added = await run('Adding an OIDC connection');
    t.match(added, { ok: true, connectionId: /^con_/, jwks_uri: /\/jwks$/ });
    t.same(
      await (
        await fetch(`${base}/admin/connections/${added.connectionId}`, { method: 'DELETE', headers: admin })
      ).status,
      200,
    );
    t.match(await run('Home-realm discovery'), { ok: true, connection: { connectionId, name: 'Acme SSO' } });
  });

  await t.test(
    'a first sign-in in a proved mail domain creates a managed account; the tokens say fed and idp',
    async (t) => {
      const page = await newPage();
      const { verifier, state } = await startAtApp(page);
      await logInUpstream(page, 'ada@acme.example');
      await page.waitForURL((url) => url.href.startsWith(CALLBACK), { timeout: 20_000 });
      const tokens = await client.authorizationCodeGrant(app, new URL(page.url()), {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
      const claims = tokens.claims()!;
      t.ok((claims.amr as string[]).includes('fed'), 'amr contains fed');
      t.equal(claims.idp, connectionId);
      t.equal(claims.idp_name, 'Acme SSO');
      t.equal(claims.acr, 'email', 'a federated sign-in reaches email');
      t.equal(claims.email, 'ada@acme.example');
      t.equal(claims.email_verified, true, 'verified: the domain is one the org proved');
      const userinfo = await client.fetchUserInfo(app, tokens.access_token, claims.sub);
      t.match(userinfo, { idp: connectionId, idp_name: 'Acme SSO' });
      const identity = await storage.identities.get(claims.sub);
      t.equal(identity?.managedBy, 'org_acme', 'managed by the org');
      t.equal((await storage.orgs.member('org_acme', claims.sub))?.role, 'member');
      const created = await receipts('federation.account_created');
      t.equal(created.length, 1);
      t.match(created[0], { receipt: { actor: { type: 'connection', id: connectionId }, orgId: 'org_acme' } });
      t.notMatch(JSON.stringify(created[0]), /ada@acme/, 'opaque ids only: never the upstream subject');
      t.equal((await receipts('federation.sign_in')).length, 1);

      // Signing in again is the same account, whatever the browser.
      const again = await newPage();
      const second = await startAtApp(again);
      await logInUpstream(again, 'ada@acme.example');
      await again.waitForURL((url) => url.href.startsWith(CALLBACK), { timeout: 20_000 });
      const more = await client.authorizationCodeGrant(app, new URL(again.url()), {
        pkceCodeVerifier: second.verifier,
        expectedState: second.state,
      });
      t.equal(more.claims()!.sub, claims.sub, 'the same federated identity is the same account');
      t.equal((await receipts('federation.account_created')).length, 1, 'no second account');
    },
  );

  await t.test(
    'with SSO required, the upstream is the way in: its session ends within 12 h, no magic link',
    async (t) => {
      const owner = { orgId: 'org_acme', actor: { type: 'person' as const, id: 'usr_owner' } };
      await updateConnection(server.services, owner, connectionId, { required: true });
      t.teardown(() => updateConnection(server.services, owner, connectionId, { required: false }));
      const page = await newPage();
      const { verifier, state } = await startAtApp(page);
      await logInUpstream(page, 'ada@acme.example');
      await page.waitForURL((url) => url.href.startsWith(CALLBACK), { timeout: 20_000 });
      const tokens = await client.authorizationCodeGrant(app, new URL(page.url()), {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
      const sub = tokens.claims()!.sub;
      const sessions = await storage.sessions.listLive(sub, Date.now());
      const newest = sessions.reduce((a, b) => (b.createdAt > a.createdAt ? b : a));
      t.ok(newest.absoluteExpiresAt <= Date.now() + 12 * 3_600_000, 'the session ends within 12 h');
      const magic = await fetch(`${base}/auth/magic/request`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: base },
        body: JSON.stringify({ email: 'ada@acme.example' }),
      });
      t.equal(((await magic.json()) as { reason?: string }).reason, 'sso_required');
    },
  );

  const refusedWith = async (t: Test, page: Page, reason: string) => {
    t.equal(await page.getAttribute('code[data-reason]', 'data-reason'), reason, `refused: ${reason}`);
  };

  /** Signs in through the connection as `login`; the app's ID token subject, or null when the callback refused. */
  const signInAs = async (login: string): Promise<{ sub: string | null; page: Page }> => {
    const page = await newPage();
    const { verifier, state } = await startAtApp(page);
    await logInUpstream(page, login);
    await page.waitForURL((url) => url.href.startsWith(CALLBACK) || url.pathname.endsWith('/callback'), {
      timeout: 20_000,
    });
    if (!page.url().startsWith(CALLBACK)) return { sub: null, page };
    const tokens = await client.authorizationCodeGrant(app, new URL(page.url()), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    return { sub: tokens.claims()!.sub, page };
  };

  await t.test(
    'a SCIM-provisioned account signs in through the connection: by externalId, else userName',
    async (t) => {
      // A SCIM token of the org, as `POST /org/acme/scim-tokens` leaves it (its own suite creates them).
      const [tokenId, secret] = ['sct_federationtest01234567', 'scim-secret-0123456789abcdef0123456789abcd0'];
      await storage.scim.addToken({
        tokenId,
        orgId: 'org_acme',
        secretHash: sha256Hex(secret),
        createdBy: 'usr_owner',
        createdAt: now,
        lastUsedAt: null,
        revokedAt: null,
      });
      const provision = async (user: Record<string, unknown>) => {
        const res = await fetch(`${base}/scim/v2/orgs/acme/Users`, {
          method: 'POST',
          headers: { authorization: `Bearer kpscim_${tokenId}.${secret}`, 'content-type': 'application/scim+json' },
          body: JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], ...user }),
        });
        t.equal(res.status, 201);
        return ((await res.json()) as { id: string }).id;
      };
      const accounts = async () => (await storage.identities.count()) as number;

      // By externalId: the upstream's sub (no address at all, so nothing else could match or create it).
      const byExternalId = await provision({ userName: 'ivy@acme.example', externalId: 'emp-1001' });
      const before = await accounts();
      t.equal((await signInAs('emp-1001')).sub, byExternalId, 'the provisioned account, matched by externalId');
      t.equal(await accounts(), before, 'no JIT duplicate');
      const linked = await receipts('federation.account_linked');
      t.match(linked.at(-1), {
        receipt: { identityId: byExternalId, orgId: 'org_acme', actor: { type: 'connection', id: connectionId } },
      });
      t.notMatch(JSON.stringify(linked), /emp-1001|ivy@/, 'opaque ids only');
      t.equal((await signInAs('emp-1001')).sub, byExternalId, 'linked now: the same account again');

      // By userName: the upstream UPN, inside a proved mail domain.
      const byUserName = await provision({ userName: 'grace@acme.example', externalId: 'emp-2002' });
      const withGrace = await accounts();
      t.equal((await signInAs('grace@acme.example')).sub, byUserName, 'matched by userName = the upstream UPN');
      t.equal(await accounts(), withGrace, 'no JIT duplicate');

      // A userName outside the proved domains never matches: refused, and the account stays unlinked.
      await provision({ userName: 'hal@elsewhere.example' });
      const refused = await signInAs('hal@elsewhere.example');
      t.equal(refused.sub, null);
      await refusedWith(t, refused.page, 'not_provisioned');
      t.equal((await receipts('federation.account_linked')).length, 2, 'linked nothing');
    },
  );

  /**
   * Holds back the upstream's answer: the browser's posts to the upstream are made for it (with
   * its cookies) and their redirects followed by hand until one points at Keyplane's callback,
   * which is kept and never followed. Playwright routes no redirect hop, hence the posts.
   */
  const holdAnswer = (page: Page) =>
    new Promise<string>((resolve) => {
      void page.route(`${upstream.issuer}/**`, async (route) => {
        if (route.request().method() !== 'POST') return route.continue();
        let response = await route.fetch({ maxRedirects: 0 });
        for (let hop = 0; hop < 5 && response.status() >= 300 && response.status() < 400; hop++) {
          const location = new URL(response.headers()['location']!, route.request().url()).href;
          if (location.startsWith(redirectUri)) {
            resolve(location);
            return route.fulfill({ status: 200, contentType: 'text/plain', body: 'held' });
          }
          response = await page.context().request.get(location, { maxRedirects: 0 });
        }
        return route.fulfill({ response });
      });
    });

  await t.test("the sign-in page's one field finds the org's connection by the address's domain", async (t) => {
    const page = await newPage();
    await page.goto(`${base}/auth`);
    await page.fill('#username', 'someone@acme.example');
    await page.click('button[data-action="signin"]');
    await page.waitForSelector('#connection-start');
    t.equal(await page.getAttribute('#connection-start', 'data-connection'), connectionId);
    t.match(await page.textContent('#connection-start'), 'Acme SSO');
    t.match(await page.getAttribute('#connection-start', 'href'), `/federation/${connectionId}/start?request=`);
  });

  await t.test('an address outside the org proved domains is not provisioned: a page and a receipt', async (t) => {
    const page = await newPage();
    await startAtApp(page);
    await logInUpstream(page, 'mallory@elsewhere.example');
    await page.waitForURL((url) => url.pathname.endsWith('/callback'));
    await refusedWith(t, page, 'not_provisioned');
    const refused = await receipts('federation.refused');
    t.match(refused.at(-1), {
      receipt: {
        kind: 'federation.refused',
        outcome: 'failure',
        reason: 'not_provisioned',
        actor: { type: 'connection' },
      },
    });
    t.notMatch(JSON.stringify(refused), /mallory/, 'opaque ids only');
  });

  await t.test("the upstream's error= ends on a page naming it", async (t) => {
    const page = await newPage();
    await startAtApp(page);
    // node-oidc-provider's own "Cancel": it answers the sign-in with error=access_denied.
    await page.click('a[href$="/abort"]');
    await page.waitForURL((url) => url.pathname.endsWith('/callback'));
    await refusedWith(t, page, 'upstream_error');
  });

  await t.test('an answer naming another issuer (RFC 9207 iss) does not verify', async (t) => {
    const page = await newPage();
    await startAtApp(page);
    const held = holdAnswer(page);
    await logInUpstream(page, 'ada@acme.example');
    const answer = new URL(await held);
    t.equal(answer.searchParams.get('iss'), upstream.issuer, 'the upstream sends iss');
    answer.searchParams.set('iss', 'https://idp.attacker.example');
    await page.unrouteAll();
    await page.goto(answer.href);
    await refusedWith(t, page, 'upstream_response_invalid');
  });

  await t.test('an owner tests the connection: the claims are shown, and nothing is created', async (t) => {
    const page = await newPage();
    const { verifier, state } = await startAtApp(page);
    await logInUpstream(page, 'ada@acme.example');
    await page.waitForURL((url) => url.href.startsWith(CALLBACK), { timeout: 20_000 });
    const ada = (
      await client.authorizationCodeGrant(app, new URL(page.url()), {
        pkceCodeVerifier: verifier,
        expectedState: state,
      })
    ).claims()!.sub;
    await storage.orgs.setRole('org_acme', ada, 'owner');
    const accounts = await storage.identities.count();
    const signIns = (await receipts('federation.sign_in')).length;
    await page.goto(`${base}/org/acme/connections/${connectionId}/test`);
    if (new URL(page.url()).origin === upstream.issuer) await logInUpstream(page, 'ada@acme.example');
    await page.waitForSelector('#tested-claims');
    t.match(await page.textContent('#tested-claims'), '"ada@acme.example"', 'the claims received');
    t.equal(await storage.identities.count(), accounts, 'no account');
    t.equal((await receipts('federation.sign_in')).length, signIns, 'no sign-in');
    const tested = await receipts('federation.tested');
    t.match(tested, [{ receipt: { connectionId, actor: { type: 'person', id: ada } } }]);
  });

  await t.test('a missing or replayed state, and an answer carried into another browser, are refused', async (t) => {
    const page = await newPage();
    await page.goto(`${redirectUri}?code=abc`);
    await refusedWith(t, page, 'federation_state_unknown');

    // An answer meant for this browser, caught before it arrives, then opened in another one.
    const victim = await newPage();
    await startAtApp(victim);
    const held = holdAnswer(victim);
    await logInUpstream(victim, 'ada@acme.example');
    const answer = await held;
    const attacker = await newPage();
    await attacker.goto(answer);
    await refusedWith(t, attacker, 'federation_state_unknown');
    // The state was spent by that attempt: the right browser cannot use it afterwards either.
    await victim.unrouteAll();
    await victim.goto(answer);
    await refusedWith(t, victim, 'federation_state_unknown');
  });

  /** Forgets the upstream's own session in a browser (its cookies), so that the next sign-in there asks who. */
  const forgetUpstream = async (context: Context) => {
    const keep = (await context.cookies()).filter((c) => !c.name.startsWith('_'));
    await context.clearCookies();
    await context.addCookies(keep);
  };
  /** The sign-in page's way in by address (home-realm discovery), in this page's browser, to the upstream's login form. */
  const startByAddress = async (page: Page, email: string) => {
    await forgetUpstream(page.context());
    const res = await page.request.post(`${base}/auth/discover`, { data: { email }, headers: { origin: base } });
    const found = (await res.json()) as { start: string };
    if (found.start === undefined) throw new Error(`discover answered ${res.status()} ${JSON.stringify(found)}`);
    await page.goto(`${base}${found.start}`);
    await page.waitForSelector('input[name="login"]');
  };
  const accountOf = async (page: Page) =>
    (await (await page.request.get(`${base}/account?format=json`)).json()) as {
      identityId?: string;
      username?: string;
    };

  await t.test(
    "a sign-in over another account's session asks first: cancel keeps it, continue replaces it",
    async (t) => {
      const page = await newPage();
      await startByAddress(page, 'cyra@acme.example');
      await logInUpstream(page, 'cyra@acme.example');
      await page.waitForURL(`${base}/account`);
      const cy = await accountOf(page);
      t.match(cy.username, /^cyra-/);

      // Signing in as the same account again asks nothing.
      await startByAddress(page, 'cyra@acme.example');
      await logInUpstream(page, 'cyra@acme.example');
      await page.waitForURL(`${base}/account`);
      t.equal((await accountOf(page)).identityId, cy.identityId, 'the same account, no question');

      // Another person at the upstream, while Cy is signed in here: the page asks.
      const accounts = await storage.identities.count();
      await startByAddress(page, 'dena@acme.example');
      await logInUpstream(page, 'dena@acme.example');
      await page.waitForSelector('#replace-question');
      const question = (await page.textContent('#replace-question'))!;
      t.match(question, cy.username!, 'names the account signed in now');
      t.match(question, 'dena@acme.example', 'and who continuing signs in');
      t.match(question, 'Acme SSO');
      await page.click('button[value="cancel"]');
      await page.waitForURL(`${base}/account`);
      t.equal((await accountOf(page)).identityId, cy.identityId, 'cancel keeps the session there was');
      t.equal(await storage.identities.count(), accounts, 'and creates nothing');
      t.match((await receipts('federation.refused')).at(-1), {
        receipt: { reason: 'replace_declined', connectionId },
      });

      await startByAddress(page, 'dena@acme.example');
      await logInUpstream(page, 'dena@acme.example');
      await page.waitForSelector('#replace-question');
      // Another origin's page cannot answer for the person.
      const confirmId = await page.getAttribute('input[name="confirm"]', 'value');
      const forged = await page.request.post(`${base}/federation/confirm`, {
        form: { confirm: confirmId!, decision: 'continue' },
        headers: { origin: 'http://evil.localhost:1', 'sec-fetch-site': 'cross-site' },
        maxRedirects: 0,
      });
      t.equal(forged.status(), 403, 'a cross-site post is refused');
      await page.click('button[value="continue"]');
      await page.waitForURL(`${base}/account`);
      const dee = await accountOf(page);
      t.match(dee.username, /^dena-/, 'continue signs the other person in');
      t.same(await storage.sessions.listLive(cy.identityId!, Date.now()), [], "and ends the other account's session");
    },
  );

  await t.test(
    'a personal account links an instance-wide connection from /account with its passkey, and removes it',
    async (t) => {
      const { connection: wide } = await createConnection(
        server.services,
        { orgId: null, actor: { type: 'admin_token' } },
        {
          type: 'oidc',
          name: 'Partner IdP',
          oidc: { issuer: upstream.issuer, client_id: 'wide', client_secret: 'wide-secret-0123456789' },
        },
      );
      upstream.addClient({
        client_id: 'wide',
        client_secret: 'wide-secret-0123456789',
        redirect_uris: [`${base}/federation/${wide.connectionId}/callback`],
        token_endpoint_auth_method: 'client_secret_basic',
      });
      // A browser with a passkey: Chromium's virtual authenticator, without autofill.
      const passkeyContext = await browser.newContext({ ignoreHTTPSErrors: true });
      contexts.push(passkeyContext);
      await withoutAutofill(passkeyContext);
      const page = await passkeyContext.newPage();
      const cdp = await passkeyContext.newCDPSession(page);
      await cdp.send('WebAuthn.enable', { enableUI: false });
      await cdp.send('WebAuthn.addVirtualAuthenticator', { options: PLATFORM_AUTHENTICATOR });
      await page.goto(`${base}/auth`);
      await page.fill('input[name="username"]', 'pia');
      await page.click('button[data-action="signup"]');
      await page.waitForURL(`${base}/account`, { timeout: 20_000 });
      const pia = await accountOf(page);
      const row = `li[data-connection="${wide.connectionId}"]`;

      // An upstream identity that nobody linked signs in no one: a callback not started on /account never links.
      const stranger = await newPage();
      await stranger.goto(`${base}/auth?connection=${wide.connectionId}`);
      await stranger.click('#connection-start');
      await logInUpstream(stranger, 'pia-at-partner');
      await stranger.waitForURL((url) => url.pathname.endsWith('/callback'));
      await refusedWith(t, stranger, 'not_provisioned');

      // Another origin's page cannot start a link.
      const forged = await page.request.post(`${base}/account/connections/${wide.connectionId}/connect`, {
        headers: { origin: 'http://evil.localhost:1', 'sec-fetch-site': 'cross-site' },
        maxRedirects: 0,
      });
      t.equal(forged.status(), 403, 'a cross-site Connect is refused');

      await page.click(`${row} button[data-action="connect"]`);
      await page.waitForSelector('input[name="login"]');
      await logInUpstream(page, 'pia-at-partner');
      await page.waitForSelector('#link-identity');
      t.match(await page.textContent('#link-identity'), 'pia-at-partner', 'shows the upstream identity');
      t.match(await page.textContent('h1'), 'Partner IdP');
      await page.click('button[data-action="confirm-link"]');
      await page.waitForURL(`${base}/account`);
      await page.waitForSelector(`${row} [data-linked]`);
      t.match((await receipts('federation.linked')).at(-1), {
        receipt: {
          connectionId: wide.connectionId,
          identityId: pia.identityId,
          actor: { type: 'person', id: pia.identityId },
        },
      });

      // Linked: the upstream identity now signs Pia in, in another browser.
      await stranger.goto(`${base}/auth?connection=${wide.connectionId}`);
      await stranger.click('#connection-start');
      await stranger.waitForURL(`${base}/account`);
      t.equal((await accountOf(stranger)).identityId, pia.identityId, 'signs in through the link');

      // An operator's account is never linked.
      await storage.operators.grant({
        identityId: pia.identityId!,
        role: 'auditor',
        grantedAt: Date.now(),
        grantedBy: null,
      });
      const refused = await page.request.post(`${base}/account/connections/${wide.connectionId}/connect`, {
        headers: { origin: base },
        maxRedirects: 0,
      });
      t.equal(refused.status(), 403, "an auditor's account cannot link");
      await storage.operators.revoke(pia.identityId!);

      await page.click(`${row} button[data-action="unlink"]`);
      await page.waitForURL(`${base}/account`);
      await page.waitForSelector(`${row} button[data-action="connect"]`);
      t.match((await receipts('federation.unlinked')).at(-1), {
        receipt: { connectionId: wide.connectionId, identityId: pia.identityId },
      });
    },
  );
});
