import t from 'tap';
import { Writable } from 'node:stream';
import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { PLATFORM_AUTHENTICATOR, chromiumSkip, launchChromium, withoutAutofill } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';
import { linkIn, readOutbox } from '../../helpers/smtp.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import { until } from '../../helpers/until.js';
import { seedAcmeOwner } from '../../helpers/mail-domains.js';
import { start } from '../../helpers/openid-client.js';
import { startUpstreamOidc } from '../../helpers/upstream-oidc.js';
import { createConnection } from '../../../control-plane/src/federation/connections.js';

/**
 * The passkey journeys of docs/passkeys.md in one Chromium and one control plane: autofill
 * (conditional mediation) resolved by the CDP virtual authenticator, the button for browsers
 * without it, authenticator names from the AAGUID list, the Signal API calls (recorded in the page
 * by a wrapper installed before its scripts run), and the passkey offered after a magic-link sign-in.
 */
const skip = chromiumSkip(t, 'browser passkey journeys suite');

/** A known AAGUID of the committed list, and its name there. */
const GOOGLE_PASSWORD_MANAGER = { aaguid: 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4', name: 'Google Password Manager' };
const UPSTREAM_SECRET = 'upstream-client-secret-0123456789';

interface Call {
  api: string;
  at: number;
  mediation?: string;
  allowCount?: number;
  userId?: string;
  name?: string;
  arg?: Record<string, unknown>;
}

/**
 * Records navigator.credentials.get/create (with their mediation) and PublicKeyCredential.signal*
 * calls in `window.__kpCalls`, before the page's own scripts run (page source text: no DOM types here).
 */
const RECORDER = String.raw`
window.__kpCalls = [];
const rec = (api, extra) => {
  const call = { api, at: Date.now(), ...extra };
  window.__kpCalls.push(call);
  if (window.__kpRecord) window.__kpRecord(call);
};
const b64url = (buffer) => {
  const bytes = buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
};
for (const method of ['get', 'create']) {
  const original = navigator.credentials[method].bind(navigator.credentials);
  navigator.credentials[method] = (options) => {
    const user = options && options.publicKey && options.publicKey.user;
    rec(method, {
      mediation: options && options.mediation,
      allowCount: ((options && options.publicKey && options.publicKey.allowCredentials) || []).length,
      ...(user ? { userId: b64url(user.id), name: user.name } : {}),
    });
    return original(options).then(
      (result) => { rec(method + '-result', { mediation: options && options.mediation }); return result; },
      (error) => { rec(method + '-error', { mediation: options && options.mediation, name: error && error.name }); throw error; },
    );
  };
}
for (const method of ['signalUnknownCredential', 'signalAllAcceptedCredentials', 'signalCurrentUserDetails']) {
  const original = window.PublicKeyCredential && PublicKeyCredential[method];
  if (!original) continue;
  PublicKeyCredential[method] = (arg) => {
    rec(method, { arg: JSON.parse(JSON.stringify(arg)) });
    return original.call(PublicKeyCredential, arg);
  };
}
`;

/**
 * The calls of each context's pages, kept in the test as well: a change on the account page reloads
 * it 400 ms after its signal, which a loaded machine's next look at `window.__kpCalls` may miss.
 */
const recordedIn = new WeakMap<BrowserContext, Call[]>();

async function recordWebAuthn(context: BrowserContext): Promise<void> {
  const recorded: Call[] = [];
  recordedIn.set(context, recorded);
  await context.exposeBinding('__kpRecord', (_source, call: Call) => void recorded.push(call));
  await context.addInitScript({ content: RECORDER });
}

const callsOf = (page: Page) => page.evaluate(() => (globalThis as unknown as { __kpCalls?: Call[] }).__kpCalls ?? []);

/** Waits until `check` holds (test/helpers/until.ts takes a value other than undefined). */
const waitFor = (what: string, check: () => Promise<boolean>, timeoutMs = 15_000) =>
  until(what, async () => ((await check()) ? true : undefined), timeoutMs);

/** Waits for a call on the page; `acrossReloads` also finds one made before the page reloaded itself. */
async function waitCall(
  page: Page,
  match: (call: Call) => boolean,
  what: string,
  options: { acrossReloads?: boolean } = {},
): Promise<Call> {
  let found: Call | undefined;
  const calls = async () =>
    options.acrossReloads ? (recordedIn.get(page.context()) ?? []) : await callsOf(page).catch(() => []);
  await waitFor(what, async () => (found = (await calls()).find(match)) !== undefined).catch(async (error) => {
    throw new Error(`${error}; calls: ${JSON.stringify(await callsOf(page).catch(() => []))}`);
  });
  return found!;
}

/** A further Chromium context with its own virtual authenticator (and the recorder). */
async function newContext(
  context: BrowserContext,
  autofill: boolean,
): Promise<{ context: BrowserContext; page: Page; cdp: CDPSession; authenticatorId: string }> {
  const browser = context.browser()!;
  const next = await browser.newContext();
  await recordWebAuthn(next);
  if (!autofill) await withoutAutofill(next);
  const page = await next.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
  const cdp = await next.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', { options: PLATFORM_AUTHENTICATOR });
  return { context: next, page, cdp, authenticatorId };
}

t.test(
  'autofill, the button, authenticator names, the Signal API and the passkey offered after a magic link',
  { skip, timeout: 180_000 },
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
    const base = server.url;
    const rpId = new URL(base).hostname;

    const { context, page, cdp, problems, addAuthenticator } = await launchChromium(t, { autofill: true });
    await recordWebAuthn(context);
    page.on('dialog', (dialog) => void dialog.accept());
    const authenticatorId = await addAuthenticator();
    const accountJson = (p: Page) =>
      p.evaluate(async () => {
        const res = await fetch('/account?format=json', { headers: { accept: 'application/json' } });
        return { status: res.status, body: (await res.json()) as Record<string, any> };
      });

    // ---- autofill on the sign-in page
    await page.goto(`${base}/auth`);
    t.equal(await page.getAttribute('#username', 'autocomplete'), 'username webauthn', 'the one identifier field');
    const conditional = await waitCall(
      page,
      (c) => c.api === 'get' && c.mediation === 'conditional',
      'conditional get',
    );
    t.equal(conditional.allowCount, 0, 'loading /auth starts a usernameless conditional request');

    // sign up with the button (it aborts the pending conditional request)
    await page.fill('#username', 'ada');
    await page.click('button[data-action="signup"]');
    await page.waitForURL(`${base}/account`, { timeout: 20_000 });
    const signedUp = await accountJson(page);
    const { identityId, userHandle } = signedUp.body as { identityId: string; userHandle: string };
    t.equal(userHandle, Buffer.from(identityId).toString('base64url'), 'the JSON view names the user handle');
    const [first] = signedUp.body['passkeys'] as Array<{ credId: string }>;

    // the account page tells the provider which passkeys the account has
    const accepted = await waitCall(page, (c) => c.api === 'signalAllAcceptedCredentials', 'signalAllAccepted');
    t.same(
      accepted.arg,
      { rpId, userId: userHandle, allAcceptedCredentialIds: [first!.credId] },
      'signalAllAcceptedCredentials with the account passkeys',
    );

    // sign out: the autofill request on /auth resolves with the virtual authenticator's passkey
    const signedOutAt = Date.now();
    await page.click('button[data-action="signout"]');
    await waitCall(
      page,
      (c) => c.api === 'get-result' && c.mediation === 'conditional' && c.at >= signedOutAt,
      'the conditional request resolved',
    ).catch(() => undefined);
    await page.waitForURL(`${base}/account`, { timeout: 20_000 }).catch(async (error) => {
      throw new Error(`autofill did not sign in (at ${page.url()}): ${problems.join('; ')}; ${error}`);
    });
    t.equal((await accountJson(page)).body['identityId'], identityId, 'autofill signed the same account in');

    // ---- the button, in a browser without autofill (feature detection says no)
    const plain = await newContext(context, false);
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    for (const credential of credentials)
      await plain.cdp.send('WebAuthn.addCredential', { authenticatorId: plain.authenticatorId, credential });
    await plain.page.goto(`${base}/auth`);
    await plain.page.click('button[data-action="signin"]');
    await plain.page.waitForURL(`${base}/account`, { timeout: 20_000 });
    const plainCalls = await callsOf(plain.page);
    t.notOk(
      plainCalls.some((c) => c.mediation === 'conditional'),
      'without autofill the page starts no conditional request',
    );
    await plain.context.close();

    // ---- an authenticator with a known AAGUID is shown by name (and icon)
    const soft = new SoftAuthenticator(base);
    const options = await page.evaluate(async () => {
      const res = await fetch('/auth/passkeys/add-options', {
        method: 'POST',
        headers: { accept: 'application/json' },
      });
      return ((await res.json()) as { options: unknown }).options;
    });
    const response = soft.create(options, { aaguid: GOOGLE_PASSWORD_MANAGER.aaguid });
    const added = await page.evaluate(async (response) => {
      const res = await fetch('/auth/passkeys/add-verify', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ response }),
      });
      return (await res.json()) as { ok: boolean; credId: string; label: string };
    }, response);
    t.equal(added.ok, true, 'the passkey is added');
    t.equal(added.label, GOOGLE_PASSWORD_MANAGER.name, 'labelled after its authenticator, not "Passkey 2"');
    const named = ((await accountJson(page)).body['passkeys'] as Array<Record<string, any>>).find(
      (p) => p['credId'] === added.credId,
    )!;
    t.equal(named['aaguid'], GOOGLE_PASSWORD_MANAGER.aaguid);
    t.equal(named['authenticator']?.name, GOOGLE_PASSWORD_MANAGER.name, 'named in the JSON view');
    await page.goto(`${base}/account`);
    const row = page.locator(`tr[data-cred-id="${added.credId}"] [data-field="authenticator"]`);
    t.equal((await row.textContent())?.trim(), GOOGLE_PASSWORD_MANAGER.name, 'named on the account page');
    t.match(await row.locator('img').getAttribute('src'), /^data:image\/svg\+xml;base64,/, 'with its icon');
    t.match(
      await page.locator(`tr[data-cred-id="${first!.credId}"] [data-field="authenticator"]`).textContent(),
      /Unknown/,
      "Chromium's virtual authenticator is not in the list",
    );

    // ---- the Signal API: a removed passkey, a new display name
    const removedAt = Date.now();
    await page.click(`button[data-action="remove-passkey"][data-cred-id="${added.credId}"]`);
    const unknown = await waitCall(
      page,
      (c) => c.api === 'signalUnknownCredential' && c.at >= removedAt,
      'signalUnknownCredential',
      { acrossReloads: true },
    );
    t.same(unknown.arg, { rpId, credentialId: added.credId }, 'signalUnknownCredential names the removed passkey');
    await page.waitForLoadState('load');
    await waitFor(
      'the passkey is removed',
      async () =>
        !((await accountJson(page)).body['passkeys'] as Array<{ credId: string }>).some(
          (p) => p.credId === added.credId,
        ),
    );

    await page.goto(`${base}/account`);
    const renamedAt = Date.now();
    await page.fill('#display-name', 'Ada Lovelace');
    await page.press('#display-name', 'Enter');
    const details = await waitCall(
      page,
      (c) => c.api === 'signalCurrentUserDetails' && c.at >= renamedAt,
      'signalCurrentUserDetails',
      { acrossReloads: true },
    );
    t.same(
      details.arg,
      { rpId, userId: userHandle, name: 'ada', displayName: 'Ada Lovelace' },
      'signalCurrentUserDetails with the new display name',
    );

    // ---- the passkey offered after a magic-link sign-in
    await page.waitForLoadState('load');
    await page.goto(`${base}/account`);
    t.equal(await page.locator('#passkey-upgrade').count(), 0, 'no offer after a passkey sign-in');
    const verifyLink = await page.evaluate(async () => {
      const res = await fetch('/auth/email/add', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ email: 'ada@example.com' }),
      });
      return res.status;
    });
    t.equal(verifyLink, 200, 'an address added');
    await server.services.mailer.idle();
    await page.goto(linkIn((await readOutbox(dataDir)).at(-1)!, '/auth/email/verify')!);

    /** Signs `p` in with a magic link mailed to ada@example.com; lands on /account. */
    const magicSignIn = async (p: Page) => {
      await p.goto(`${base}/auth/magic/request`);
      const asked = await p.evaluate(async () => {
        const res = await fetch('/auth/magic/request', {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ email: 'ada@example.com' }),
        });
        return res.status;
      });
      t.equal(asked, 200, 'a magic link is mailed');
      await server.services.mailer.idle();
      await p.goto(linkIn((await readOutbox(dataDir)).at(-1)!, '/auth/magic')!);
      await p.waitForURL(`${base}/account`, { timeout: 10_000 });
    };

    // where the browser can, the page tries a conditional create first
    const offered = await newContext(context, true);
    await magicSignIn(offered.page);
    const conditionalCreate = await waitCall(
      offered.page,
      (c) => c.api === 'create' && c.mediation === 'conditional',
      'conditional create',
    );
    t.equal(conditionalCreate.userId, userHandle, 'the conditional create is for the account signed in');
    await offered.context.close();

    // one click creates it; the offer is gone afterwards
    const oneClick = await newContext(context, false);
    await magicSignIn(oneClick.page);
    t.equal(await oneClick.page.locator('[data-field="assurance"]').textContent(), 'email', 'signed in at email');
    t.equal(await oneClick.page.locator('#passkey-upgrade').isVisible(), true, 'a passkey is offered');
    const before = ((await accountJson(oneClick.page)).body['passkeys'] as unknown[]).length;
    await oneClick.page.click('button[data-action="upgrade-passkey"]');
    await waitFor(
      'the offered passkey is created',
      async () => ((await accountJson(oneClick.page)).body['passkeys'] as unknown[]).length > before,
      20_000,
    );
    await oneClick.page.goto(`${base}/account`);
    t.equal(await oneClick.page.locator('#passkey-upgrade').count(), 0, 'not offered again once created');
    await oneClick.context.close();

    // "Not now" is remembered: not offered at the next magic-link sign-in
    const declines = await newContext(context, false);
    await magicSignIn(declines.page);
    t.equal(await declines.page.locator('#passkey-upgrade').isVisible(), true, 'offered on another browser');
    await declines.page.click('button[data-action="decline-upgrade"]');
    await waitFor(
      'the decline is recorded',
      async () => (await accountJson(declines.page)).body['passkeyUpgrade'] === false,
      10_000,
    );
    await declines.context.clearCookies();
    await magicSignIn(declines.page);
    t.equal(await declines.page.locator('#passkey-upgrade').count(), 0, 'not offered again within a month');
    await declines.context.close();

    t.same(problems, [], 'no page errors, failed loads or CSP violations');
  },
);

t.test(
  'required SSO: the passkey offered after the upstream sign-in only steps that session up, never signs in alone',
  { skip, timeout: 180_000 },
  async (t) => {
    const upstream = await startUpstreamOidc(t);
    const server = await start(t, { fetch: { allowPrivateTargets: true, caFile: upstream.tls.caFile } });
    const base = server.url;
    const { storage } = server.services;
    await seedAcmeOwner(storage, Date.now());
    const { connection } = await createConnection(
      server.services,
      { orgId: 'org_acme', actor: { type: 'person', id: 'usr_owner' } },
      {
        type: 'oidc',
        name: 'Acme SSO',
        oidc: { issuer: upstream.issuer, client_id: 'keyplane', client_secret: UPSTREAM_SECRET },
        domains: ['acme.example'],
        jit: { role: 'member' },
        required: true,
      },
    );
    upstream.addClient({
      client_id: 'keyplane',
      client_secret: UPSTREAM_SECRET,
      redirect_uris: [`${base}/federation/${connection.connectionId}/callback`],
      token_endpoint_auth_method: 'client_secret_basic',
    });

    // Autofill stays on: the virtual authenticator answers the sign-in page's conditional request by itself.
    const { browser, problems } = await launchChromium(t, {
      autofill: true,
      expectedFailures: ['/auth/assertion-verify'],
    });
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    t.teardown(() => context.close());
    await recordWebAuthn(context);
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable', { enableUI: false });
    await cdp.send('WebAuthn.addVirtualAuthenticator', { options: PLATFORM_AUTHENTICATOR });
    const accountJson = () =>
      page.evaluate(async () => {
        const res = await fetch('/account?format=json', { headers: { accept: 'application/json' } });
        return { status: res.status, body: (await res.json()) as Record<string, any> };
      });

    // Sign in at the upstream (node-oidc-provider's own login and consent pages); JIT makes the managed account.
    await page.goto(`${base}/auth?connection=${connection.connectionId}`);
    await page.click('#connection-start');
    await page.waitForSelector('input[name="login"]');
    await page.fill('input[name="login"]', 'mia@acme.example');
    await page.fill('input[name="password"]', 'any');
    await page.click('button[type="submit"]');
    await page.waitForLoadState();
    if (new URL(page.url()).origin === upstream.issuer) await page.click('button[type="submit"]');
    await page.waitForURL(`${base}/account`, { timeout: 20_000 });

    // The offer names what the passkey is for here: confirming, not signing in.
    t.equal(await page.locator('#passkey-upgrade').isVisible(), true, 'a passkey is offered after the upstream');
    t.equal(await page.locator('#upgrade-h').textContent(), 'Confirm with a passkey');
    t.match(await page.locator('#passkey-upgrade').textContent(), /never signs you in by itself/);
    t.equal((await accountJson()).body['passkeyStepUpOnly'], true);
    await page.click('button[data-action="upgrade-passkey"]');
    await waitFor(
      'the offered passkey is created',
      async () => ((await accountJson()).body['passkeys'] as unknown[]).length === 1,
      20_000,
    );

    // Within the upstream's session the passkey steps up to sensitive.
    await page.goto(`${base}/auth/step-up?return=/account`);
    await page.click('button[data-action="step-up"]');
    await page.waitForURL(`${base}/account`, { timeout: 20_000 });
    t.equal(await page.locator('[data-field="assurance"]').textContent(), 'sensitive', 'stepped up with the passkey');

    // Without that session, the same passkey opens none: autofill and the button are refused sso_required.
    await context.clearCookies();
    const signedOutAt = Date.now();
    await page.goto(`${base}/auth`);
    await waitCall(
      page,
      (c) => c.api === 'get-result' && c.mediation === 'conditional' && c.at >= signedOutAt,
      'the conditional request answered by the passkey',
    );
    await page.waitForFunction(
      () => /identity provider/.test((globalThis as any).document.getElementById('status')?.textContent ?? ''),
      undefined,
      { timeout: 10_000 },
    );
    t.equal((await accountJson()).status, 401, 'autofill opened no session');
    await page.click('button[data-action="signin"]');
    await waitCall(page, (c) => c.api === 'get-result' && c.mediation !== 'conditional', 'the button request');
    await page.waitForTimeout(500);
    t.equal((await accountJson()).status, 401, 'nor did the button');
    t.equal(new URL(page.url()).pathname, '/auth', 'the page stays on the sign-in page');
    const refusals = (await callsOf(page)).filter((c) => c.api === 'get-result').length;
    t.ok(refusals <= 2, `the refused passkey is not asked for again and again (${refusals} answers)`);
    t.same(problems, [], 'no page errors');
  },
);
