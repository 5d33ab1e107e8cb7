import t from 'tap';
import { mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { chromiumSkip, launchChromium, PLATFORM_AUTHENTICATOR } from '../../helpers/browser.js';
import { LIVE_ADMIN, registerLiveClient, startLiveControlPlane } from '../../helpers/live-browser.js';
import { until } from '../../helpers/until.js';
import { escapeHtml } from '#lib/html/escape-html.js';
import { storedAgent } from '../../helpers/agents.js';
import { seriousViolations } from '../../helpers/axe.js';

/**
 * The operator console (docs/console.md) in Debian's Chromium, one browser and one control plane:
 * an operator opens it with a passkey (CDP virtual authenticator), is sent to step up by a change
 * and finds the form again, unchanged, until its click; the receipts name the operator; a client
 * registered in the console authenticates with the secret shown once, a refused form keeps its
 * input; an auditor reads but cannot change (403 on a forged post); the sign-out, role and delete
 * forms posted by another origin's page are refused; an account without a role and
 * an everyday session get no console; axe finds nothing serious in English and Arabic. With
 * KEYPLANE_DOC_SCREENSHOTS=1 the run writes docs/images/console-*.png for docs/console.md.
 */
const CHANGE_BUTTONS =
  /disable|enable|delete|remove|end .*sessions|revoke|rotate|register|grant|save|edit|set role|create|send a test/i;
const SCREENSHOTS = process.env.KEYPLANE_DOC_SCREENSHOTS === '1';

// One browser and one server for every check: on a loaded machine the whole walk takes minutes.
t.setTimeout(300_000);
const skip = chromiumSkip(t, 'browser console suite');

t.test(
  'the operator console, as an operator, an auditor and an account without a role',
  { skip, timeout: 300_000 },
  async (t) => {
    // The operator's webhooks may point at this machine (a refused connection fills the delivery log).
    const server = await startLiveControlPlane(t, { 'fetch.operatorPrivateTargets': ['127.0.0.1/32'] });
    const cp = server.url;
    const { browser, context, page, addAuthenticator } = await launchChromium(t, {
      expectedFailures: ['/console/session/verify', '/console/clients', '/console/webhooks', '/admin/accounts/usr_x'],
    });
    await addAuthenticator();

    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(cp + path, {
        method,
        headers: { authorization: `Bearer ${LIVE_ADMIN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    const receiptOf = async (hash: string) =>
      ((await (await fetch(`${cp}/receipts/${hash}`)).json()) as { receipt: any }).receipt;
    const stateOf = async (id: string) => (await admin('GET', `/admin/accounts/${id}`)).body.state;

    async function signUp(p: Page, username: string): Promise<string> {
      await p.goto(`${cp}/auth`);
      await p.fill('input[name="username"]', username);
      await p.click('button[data-action="signup"]');
      await p.waitForURL(`${cp}/account`, { timeout: 20_000 }).catch(async (error: unknown) => {
        throw new Error(`${username} not signed up: ${await p.innerText('body')} ${String(error)}`);
      });
      return (await (await p.context().request.get(`${cp}/account?format=json`)).json()).identityId;
    }
    async function newPerson(username: string): Promise<{ context: BrowserContext; page: Page; id: string }> {
      const ctx = await browser.newContext();
      const p = await ctx.newPage();
      const cdp = await ctx.newCDPSession(p);
      await cdp.send('WebAuthn.enable', { enableUI: false });
      await cdp.send('WebAuthn.addVirtualAuthenticator', { options: PLATFORM_AUTHENTICATOR });
      return { context: ctx, page: p, id: await signUp(p, username) };
    }
    async function openConsole(p: Page): Promise<void> {
      await p.goto(`${cp}/console`);
      t.match(
        new URL(p.url()).pathname,
        '/console/sign-in',
        'without a console session /console sends to its passkey page',
      );
      await p.click('button[data-action="console-open"]');
      await p.waitForURL(`${cp}/console`, { timeout: 20_000 });
    }
    /** Clicks a change button; when the step-up has lapsed, steps up and clicks it again on the page that comes back. */
    async function changeWith(p: Page, click: () => Promise<void>): Promise<void> {
      await click();
      await p.waitForLoadState('load');
      if (!p.url().includes('/auth/step-up')) return;
      await p.click('button[data-action="step-up"]');
      await p.waitForURL(/[?&]resume=/, { timeout: 20_000 });
      await click();
      await p.waitForLoadState('load');
    }
    const shot = async (p: Page, name: string) => {
      if (!SCREENSHOTS) return;
      mkdirSync(join('docs', 'images'), { recursive: true });
      await p.screenshot({ path: join('docs', 'images', `console-${name}.png`), fullPage: true });
    };

    const adaId = await signUp(page, 'ada');
    const bea = await newPerson('bea');
    const cy = await newPerson('cyd');
    const made = await cy.context.request.post(`${cp}/auth/orgs/create`, {
      headers: { origin: cp, accept: 'application/json' },
      data: { name: 'Acme Ops' },
    });
    const orgSlug = ((await made.json()) as { slug: string }).slug;
    t.equal(
      (await admin('POST', '/admin/operators', { account: 'ada', role: 'operator' })).status,
      200,
      'ada is made an operator',
    );

    await t.test('an everyday session opens neither the console nor the admin API', async (t) => {
      const res = await context.request.get(`${cp}/admin/accounts/${cy.id}`, { maxRedirects: 0 });
      t.equal(res.status(), 401, '/admin/* with kp_session alone');
      const html = await context.request.get(`${cp}/console`, { maxRedirects: 0 });
      t.equal(html.status(), 303);
      t.equal(html.headers()['location'], '/console/sign-in');
    });

    await t.test('an operator opens the console with a passkey: its own strict cookie', async (t) => {
      await openConsole(page);
      const cookie = (await context.cookies(cp)).find((c) => c.name === 'kp_console');
      t.ok(cookie, 'kp_console is set (plain-http loopback issuer)');
      t.equal(cookie?.sameSite, 'Strict');
      t.equal(cookie?.httpOnly, true);
      const kids = ((await (await fetch(`${cp}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> })
        .keys;
      const text = await page.innerText('main');
      t.match(text, /ready/, 'health is shown');
      t.ok(
        kids.some((k) => text.includes(k.kid)),
        'a signing key id is shown with its age',
      );
      await until('a sealed checkpoint on the overview', async () => {
        await page.reload();
        return /Epoch \d+/.test(await page.innerText('main')) || undefined;
      });
      await shot(page, 'overview');
      const read = await context.request.get(`${cp}/admin/accounts/${cy.id}`);
      t.equal(read.status(), 200, 'the console session reads the admin API');
    });

    let disabledReceipt = '';
    await t.test(
      'a change sends to step-up, the form comes back and waits for the click; the receipt names the operator',
      async (t) => {
        await page.goto(`${cp}/console/accounts`);
        await page.fill('input[type="search"]', cy.id);
        await page.press('input[type="search"]', 'Enter');
        await page.waitForLoadState('load');
        await page.click(`a[href="/console/accounts/${cy.id}"]`);
        await page.waitForURL(`${cp}/console/accounts/${cy.id}`);
        await shot(page, 'account');
        await page.getByRole('button', { name: 'Disable' }).click();
        await page.waitForURL(/\/auth\/step-up\?return=/);
        t.equal(await stateOf(cy.id), 'active', 'nothing changed before the step-up');
        await page.click('button[data-action="step-up"]');
        await page.waitForURL(new RegExp(`/console/accounts/${cy.id}\\?resume=`), { timeout: 20_000 });
        t.equal(await stateOf(cy.id), 'active', 'the form is back, not replayed');
        await page.getByRole('button', { name: 'Disable' }).click();
        await page.waitForLoadState('load');
        t.equal(await stateOf(cy.id), 'disabled', 'the click after the step-up disabled the account');
        disabledReceipt = (await page.locator('[role="status"] a code').first().textContent()) ?? '';
        const receipt = await receiptOf(disabledReceipt);
        t.equal(receipt.kind, 'account.disabled');
        t.same(receipt.actor, { type: 'person', id: adaId }, 'the receipt names the operator');
        const auto = await admin('POST', `/admin/accounts/${cy.id}/enable`);
        t.same((await receiptOf(auto.body.receipt)).actor, { type: 'admin_token' }, 'the admin token says so');
      },
    );

    await t.test(
      'clients: a refused form keeps its input; a registered client shows its secret once; rotation',
      async (t) => {
        await page.goto(`${cp}/console/clients`);
        await page.fill('#client_name', 'Console app');
        await page.fill('#redirect_uris', 'https://rp.example/cb#fragment');
        await page.getByRole('button', { name: 'Register' }).click();
        await page.waitForLoadState('load');
        t.match(await page.locator('[role="alert"]').innerText(), /redirect/i, 'the reason is beside the form');
        t.equal(await page.inputValue('#redirect_uris'), 'https://rp.example/cb#fragment', 'the input is kept');
        t.equal(await page.inputValue('#client_name'), 'Console app');
        await page.fill('#redirect_uris', 'https://rp.example/cb');
        await page.getByRole('button', { name: 'Register' }).click();
        await page.waitForLoadState('load');
        const codes = await page.locator('[role="status"] code').allTextContents();
        const clientId = codes.find((c) => c.startsWith('cl_'))!;
        const secret = codes.find((c) => c !== clientId && c.length >= 32 && !/^[0-9a-f]{64}$/.test(c))!;
        t.ok(clientId && secret, 'the client id and its secret are shown');
        const client = await admin('GET', `/admin/clients/${clientId}`);
        t.equal(client.body.client.client_type, 'confidential');
        const works = async (s: string) => {
          const res = await fetch(`${cp}/auth/token`, {
            method: 'POST',
            headers: {
              authorization: `Basic ${Buffer.from(`${clientId}:${s}`).toString('base64')}`,
              'content-type': 'application/x-www-form-urlencoded',
            },
            body: new URLSearchParams({
              grant_type: 'authorization_code',
              code: 'x',
              redirect_uri: 'https://rp.example/cb',
              code_verifier: 'v'.repeat(43),
            }),
          });
          return ((await res.json()) as { error: string }).error !== 'invalid_client';
        };
        t.ok(await works(secret), 'the shown secret authenticates');
        await shot(page, 'client');
        await page.getByRole('button', { name: 'Rotate secret' }).click();
        await page.waitForLoadState('load');
        t.notOk(await works(secret), 'the old secret is refused after rotation');
      },
    );

    await t.test(
      'orgs: one org with its members, teams, domains, connections and SCIM tokens; an operator removes and revokes',
      async (t) => {
        const { storage } = server.services;
        const org = (await storage.orgs.getBySlug(orgSlug))!;
        for (const [connectionId, name, required] of [
          ['con_console_gone', 'Old IdP', false],
          ['con_console_kept', 'Acme IdP', true],
        ] as const)
          await storage.connections.insert({
            connectionId,
            orgId: org.orgId,
            type: 'oidc',
            name,
            settings: { issuer: 'https://idp.example', clientId: 'kp', tokenEndpointAuthMethod: 'client_secret_basic' },
            secretSealed: null,
            domains: ['acme.example'],
            jit: { role: 'member' },
            required,
            maxAssurance: 'email',
            sessionMaxHours: 12,
            createdAt: Date.now(),
            updatedAt: Date.now(),
          });
        for (const tokenId of ['sct_console_gone', 'sct_console_kept'])
          await storage.scim.addToken({
            tokenId,
            orgId: org.orgId,
            secretHash: '0'.repeat(64),
            createdBy: cy.id,
            createdAt: Date.now(),
            lastUsedAt: null,
            revokedAt: null,
          });
        await page.goto(`${cp}/console/orgs`);
        await page.click(`a[href="/console/orgs/${orgSlug}"]`);
        await page.waitForURL(`${cp}/console/orgs/${orgSlug}`);
        const text = await page.innerText('main');
        t.match(text, /cyd\s+owner/, 'the founder of the org is listed as its owner');
        t.match(text, /No team\./);
        t.match(text, /No mail domain\./);
        t.match(
          await page.innerText('tr[data-connection="con_console_kept"]'),
          /Acme IdP[\s\S]*oidc[\s\S]*acme\.example[\s\S]*yes/,
          'a connection with its name, type, domains and whether it is required',
        );
        t.match(
          await page.innerText('tr[data-token="sct_console_kept"]'),
          /sct_console_kept[\s\S]*never/,
          'a token, unused',
        );
        await shot(page, 'org');

        await changeWith(page, () => page.getByRole('button', { name: 'Revoke sct_console_gone' }).click());
        const revoked = await receiptOf((await page.locator('[role="status"] a code').first().textContent()) ?? '');
        t.equal(revoked.kind, 'scim.token_revoked');
        t.same(revoked.actor, { type: 'person', id: adaId }, 'the receipt names the operator');
        t.match(await page.innerText('tr[data-token="sct_console_gone"]'), /revoked/);
        t.notOk(
          (await storage.scim.tokens(org.orgId)).find((k) => k.tokenId === 'sct_console_gone')?.revokedAt === null,
          'the token is revoked',
        );

        await changeWith(page, () => page.getByRole('button', { name: 'Remove the connection Old IdP' }).click());
        const removed = await receiptOf((await page.locator('[role="status"] a code').first().textContent()) ?? '');
        t.equal(removed.kind, 'connection.deleted');
        t.same(removed.actor, { type: 'person', id: adaId }, 'the receipt names the operator');
        t.equal(await storage.connections.get('con_console_gone'), null, 'the connection is gone');
        t.equal(await page.locator('tr[data-connection="con_console_gone"]').count(), 0);
      },
    );

    await t.test(
      'Shared Signals streams: each with its receiver, delivery, status and events; an operator disables and deletes',
      async (t) => {
        const receiver = await registerLiveClient(cp, { redirect_uris: ['https://rx.example/cb'] });
        const { storage } = server.services;
        for (const [streamId, delivery] of [
          ['sst_console_push', 'push'],
          ['sst_console_poll', 'poll'],
        ] as const)
          await storage.ssf.insertStream({
            streamId,
            clientId: receiver.client_id,
            delivery,
            endpointUrl: delivery === 'push' ? 'https://rx.example/ssf' : null,
            authorizationSealed: null,
            eventsRequested: ['https://schemas.openid.net/secevent/caep/event-type/session-revoked'],
            description: null,
            status: 'enabled',
            statusReason: null,
            createdAt: Date.now(),
            updatedAt: Date.now(),
          });
        await page.goto(`${cp}/console/streams`);
        t.match(
          await page.innerText('tr[data-stream="sst_console_push"]'),
          new RegExp(
            `${receiver.client_id}[\\s\\S]*push[\\s\\S]*rx\\.example/ssf[\\s\\S]*enabled[\\s\\S]*session-revoked`,
          ),
          'the receiver, delivery, status and the events it asked for',
        );
        await changeWith(page, () => page.getByRole('button', { name: 'Disable sst_console_push' }).click());
        const disabled = await receiptOf((await page.locator('[role="status"] a code').first().textContent()) ?? '');
        t.equal(disabled.kind, 'ssf.stream_status_changed');
        t.same(disabled.actor, { type: 'person', id: adaId }, 'the receipt names the operator');
        t.equal((await storage.ssf.getStream('sst_console_push'))?.status, 'disabled');
        t.match(await page.innerText('tr[data-stream="sst_console_push"]'), /disabled/);
        await changeWith(page, () => page.getByRole('button', { name: 'Delete sst_console_poll' }).click());
        const deleted = await receiptOf((await page.locator('[role="status"] a code').first().textContent()) ?? '');
        t.equal(deleted.kind, 'ssf.stream_deleted');
        t.same(deleted.actor, { type: 'person', id: adaId });
        t.equal(await storage.ssf.getStream('sst_console_poll'), null, 'the stream is gone');
      },
    );

    await t.test(
      'agents: each with its owner and grants; an operator revokes a grant, the receipt names it',
      async (t) => {
        const agentId = 'agt_console_test';
        await server.services.storage.agents.insertAgent(
          storedAgent(agentId, { proofId: 'p-console-test', ownerId: cy.id, name: 'cyd-bot' }),
        );
        const client = await registerLiveClient(cp, {
          redirect_uris: ['http://localhost:9/callback'],
          grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:jwt-bearer'],
          scope: 'openid notes:read',
          access: { humans: true, agents: true },
        });
        const granted = await admin('POST', `/admin/agents/${agentId}/grants`, {
          client_id: client.client_id,
          scope: 'notes:read',
        });
        t.equal(granted.status, 200, JSON.stringify(granted.body));
        await page.goto(`${cp}/console/agents`);
        const row = page.locator(`tr[data-agent="${agentId}"]`);
        t.match(
          await row.innerText(),
          /cyd-bot[\s\S]*cyd[\s\S]*active[\s\S]*notes:read/,
          'the agent, its owner and its grant',
        );
        const revoke = () => row.getByRole('button', { name: `Revoke the grant at ${client.client_id}` }).click();
        await revoke();
        await page.waitForLoadState('load');
        if (page.url().includes('/auth/step-up')) {
          await page.click('button[data-action="step-up"]');
          await page.waitForURL(/\/console\/agents\?resume=/, { timeout: 20_000 });
          await revoke();
          await page.waitForLoadState('load');
        }
        const hash = (await page.locator('[role="status"] a code').first().textContent()) ?? '';
        const receipt = await receiptOf(hash);
        t.equal(receipt.kind, 'agent.grant_revoked');
        t.same(receipt.actor, { type: 'person', id: adaId }, 'the receipt names the operator');
        t.equal(receipt.grantId, granted.body.grant_id);
        t.match(await page.locator(`tr[data-agent="${agentId}"]`).innerText(), /none/, 'no grant stands');
      },
    );

    await t.test(
      'webhooks: a refused form keeps its input; create shows the secret once; test, its delivery log, delete',
      async (t) => {
        const receiptIn = async () =>
          receiptOf((await page.locator('[role="status"] a code').first().textContent()) ?? '');
        await page.goto(`${cp}/console/webhooks`);
        await page.fill('#wh-url', 'http://hooks.example/plain');
        await page.fill('#wh-events', 'account.*');
        await page.getByRole('button', { name: 'Create the webhook' }).click();
        await page.waitForLoadState('load');
        t.ok(await page.locator('[role="alert"]').count(), 'a plain-http URL is refused beside the form');
        t.equal(await page.inputValue('#wh-url'), 'http://hooks.example/plain', 'the input is kept');
        t.equal(await page.inputValue('#wh-events'), 'account.*');
        await page.fill('#wh-url', 'https://127.0.0.1:9/console-hook');
        await page.getByRole('button', { name: 'Create the webhook' }).click();
        await page.waitForLoadState('load');
        t.match(await page.locator('[role="status"]').innerText(), /whsec_/, 'the signing secret is shown');
        const created = await receiptIn();
        t.equal(created.kind, 'webhook.created');
        t.same(created.actor, { type: 'person', id: adaId }, 'the receipt names the operator');
        const webhookId = created.webhookId as string;
        await page.goto(`${cp}/console/webhooks/${webhookId}`);
        t.notOk((await page.locator('main').innerText()).includes('whsec_'), 'the secret is never shown again');
        await page.getByRole('button', { name: 'Send a test' }).click();
        await page.waitForLoadState('load');
        t.equal((await receiptIn()).kind, 'webhook.tested');
        await until('the test delivery attempted', async () => {
          await page.goto(`${cp}/console/webhooks/${webhookId}`);
          return (await page.locator('tr[data-delivery]').count()) > 0 || undefined;
        });
        await shot(page, 'webhook');
        await page.getByRole('button', { name: 'Delete the webhook' }).click();
        await page.waitForLoadState('load');
        const deleted = await receiptIn();
        t.equal(deleted.kind, 'webhook.deleted');
        t.same(deleted.actor, { type: 'person', id: adaId });
        t.equal((await admin('GET', `/admin/webhooks/${webhookId}`)).status, 404, 'it is gone');
      },
    );

    await t.test('receipts: search by type, any id and time; a refused query keeps its input', async (t) => {
      await page.goto(`${cp}/console/receipts`);
      await page.fill('#r-type', 'account.disabled');
      await page.fill('#r-subject', cy.id);
      await page.fill('#r-since', '2000-01-01T00:00');
      await page.getByRole('button', { name: 'Search' }).first().click();
      await page.waitForLoadState('load');
      const rows = await page.locator('table[aria-labelledby="found-heading"] tbody tr').allInnerTexts();
      t.equal(rows.length, 1, 'the one disabling of cyd');
      t.match(rows[0], `person ${adaId}`, 'with the operator who acted');
      t.equal(await page.inputValue('#r-subject'), cy.id, 'the query stays in the form');
      await page.fill('#r-until', '2000-01-01T00:00');
      await page.getByRole('button', { name: 'Search' }).first().click();
      await page.waitForLoadState('load');
      t.match(await page.innerText('main'), /No receipt matches\./, 'nothing before 2000');
      await page.fill('#r-type', 'Not A Type');
      await page.getByRole('button', { name: 'Search' }).first().click();
      await page.waitForLoadState('load');
      t.ok(await page.locator('[role="alert"]').count(), 'a malformed type is refused beside the form');
      t.equal(await page.inputValue('#r-type'), 'Not A Type', 'and kept');
    });

    await t.test('a receipt with its inclusion proof, checked in the page with WebCrypto', async (t) => {
      await until('the receipt sealed', async () =>
        'pending' in ((await (await fetch(`${cp}/receipts/${disabledReceipt}`)).json()) as object) ? undefined : true,
      );
      await page.goto(`${cp}/console/receipts?hash=${disabledReceipt}`);
      await page.click('#verify-proof');
      await page.waitForSelector('#proof-status[data-verified]');
      t.equal(
        await page.getAttribute('#proof-status', 'data-verified'),
        'true',
        'the proof verifies against the signed checkpoint',
      );
      await shot(page, 'receipt');
    });

    await t.test(
      'an auditor granted in the console reads, sees no change buttons and is refused a forged post',
      async (t) => {
        await page.goto(`${cp}/console/accounts/${bea.id}`);
        await page.selectOption('#role', 'auditor');
        await page.getByRole('button', { name: 'Set role' }).click();
        await page.waitForLoadState('load');
        t.equal(
          (await admin('GET', '/admin/operators')).body.operators.find((o: any) => o.identityId === bea.id)?.role,
          'auditor',
        );
        await openConsole(bea.page);
        for (const path of [
          '/console',
          '/console/accounts',
          `/console/accounts/${cy.id}`,
          '/console/clients',
          `/console/orgs/${orgSlug}`,
          '/console/agents',
          '/console/webhooks',
          '/console/streams',
          '/console/receipts',
        ]) {
          await bea.page.goto(cp + path);
          t.same(
            await bea.page.getByRole('button', { name: CHANGE_BUTTONS }).allInnerTexts(),
            [],
            `no change button on ${path}`,
          );
        }
        const forged = await bea.context.request.post(`${cp}/console/accounts/${cy.id}/disable`, {
          headers: { origin: cp },
          form: {},
          maxRedirects: 0,
        });
        t.equal(forged.status(), 403, 'the auditor posting Disable is refused');
        const forgedRevoke = await bea.context.request.post(`${cp}/console/agents/grants/agg_x/revoke`, {
          headers: { origin: cp },
          form: {},
          maxRedirects: 0,
        });
        t.equal(forgedRevoke.status(), 403, "the auditor revoking an agent's grant is refused");
        const forgedHook = await bea.context.request.post(`${cp}/console/webhooks`, {
          headers: { origin: cp },
          form: { url: 'https://127.0.0.1:9/x', events: '*' },
          maxRedirects: 0,
        });
        t.equal(forgedHook.status(), 403, 'the auditor creating a webhook is refused');
        await bea.page.goto(`${cp}/console/orgs/${orgSlug}`);
        t.match(
          await bea.page.innerText('tr[data-connection="con_console_kept"]'),
          /Acme IdP/,
          'the auditor sees connections',
        );
        t.match(await bea.page.innerText('tr[data-token="sct_console_kept"]'), /live/, 'and SCIM tokens');
        for (const [path, what] of [
          [`/console/orgs/${orgSlug}/scim-tokens/sct_console_kept/revoke`, 'revoking a SCIM token'],
          [`/console/orgs/${orgSlug}/connections/con_console_kept/remove`, 'removing a connection'],
          ['/console/streams/sst_console_push/delete', 'deleting a stream'],
        ]) {
          const forged = await bea.context.request.post(cp + path, {
            headers: { origin: cp },
            form: {},
            maxRedirects: 0,
          });
          t.equal(forged.status(), 403, `the auditor ${what} is refused`);
        }
        t.ok(await server.services.storage.connections.get('con_console_kept'), 'the connection stays');
        t.ok(await server.services.storage.ssf.getStream('sst_console_push'), 'the stream stays');
        t.equal(await stateOf(cy.id), 'active');
        const exportRead = await bea.context.request.get(`${cp}/admin/operators`);
        t.equal(exportRead.status(), 200, 'the auditor reads the admin API');
      },
    );

    await t.test(
      "sign-out, role and delete forms sent from another origin's page are refused and change nothing",
      async (t) => {
        // Another port of localhost is the same site: the browser sends the console's SameSite=Strict
        // cookie too, and the Origin check alone refuses (docs/security.md#csrf-on-forms).
        const evil = createServer((req: IncomingMessage, res: ServerResponse) => {
          const url = new URL(req.url ?? '/', 'http://x');
          const inputs = [...new URLSearchParams(url.searchParams.get('body') ?? '')]
            .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
            .join('');
          res.setHeader('content-type', 'text/html; charset=utf-8');
          res.end(
            `<!doctype html><form method="post" action="${escapeHtml(url.searchParams.get('url') ?? '')}">${inputs}</form><script>document.forms[0].submit()</script>`,
          );
        });
        await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
        t.teardown(() => new Promise((resolve) => evil.close(resolve)));
        const elsewhere = `http://localhost:${(evil.address() as AddressInfo).port}`;
        const attacker = await context.newPage();
        const forge = async (path: string, body: Record<string, string>) => {
          const responded = attacker.waitForResponse((r) => r.url() === cp + path && r.request().method() === 'POST', {
            timeout: 20_000,
          });
          await attacker.goto(
            `${elsewhere}/?${new URLSearchParams({ url: cp + path, body: new URLSearchParams(body).toString() })}`,
          );
          const response = await responded;
          return { status: response.status(), body: await response.text().catch(() => '') };
        };
        const roleOf = async (id: string) =>
          (await admin('GET', '/admin/operators')).body.operators.find((o: any) => o.identityId === id)?.role;

        const role = await forge(`/console/accounts/${bea.id}/role`, { role: 'none' });
        t.equal(role.status, 403);
        t.match(role.body, /origin_mismatch/, 'the role form: refused as another origin');
        t.equal(await roleOf(bea.id), 'auditor', 'the role stays');
        const deleted = await forge(`/console/accounts/${cy.id}/delete`, { confirm: 'cyd' });
        t.equal(deleted.status, 403);
        t.match(deleted.body, /origin_mismatch/, 'the delete form: refused as another origin');
        t.equal(await stateOf(cy.id), 'active', 'the account stays');
        const signout = await forge('/console/signout', {});
        t.equal(signout.status, 403);
        t.match(signout.body, /origin_mismatch/, 'the sign-out form: refused as another origin');
        await attacker.close();
        await page.goto(`${cp}/console`);
        t.equal(new URL(page.url()).pathname, '/console', 'the console session is still open');
      },
    );

    await t.test('an account without a role gets no console', async (t) => {
      await cy.page.goto(`${cp}/console`);
      await cy.page.click('button[data-action="console-open"]');
      await cy.page.waitForSelector('#status:not(:empty)');
      t.equal(new URL(cy.page.url()).pathname, '/console/sign-in', 'it stays on the passkey page');
      t.notOk(
        (await cy.context.cookies(cp)).some((c) => c.name === 'kp_console'),
        'and gets no console cookie',
      );
    });

    await t.test('an account its org suspended is refused account_suspended, before its role is asked', async (t) => {
      await server.services.storage.identities.setSuspended(cy.id, Date.now());
      await cy.page.goto(`${cp}/console`);
      await cy.page.click('button[data-action="console-open"]');
      // "Waiting for your passkey…" comes first; the refusal replaces it.
      await cy.page
        .waitForFunction(`/suspended/.test(document.getElementById('status').textContent)`, undefined, {
          timeout: 20_000,
        })
        .catch(() => undefined);
      t.match(await cy.page.textContent('#status'), /suspended/, 'the page names the suspension');
      t.notOk(
        (await cy.context.cookies(cp)).some((c) => c.name === 'kp_console'),
        'and gets no console cookie',
      );
      await server.services.storage.identities.setSuspended(cy.id, null);
    });

    await t.test('the last operator cannot be revoked', async (t) => {
      const res = await admin('DELETE', '/admin/operators/ada');
      t.equal(res.status, 409);
      t.equal(res.body.reason, 'last_operator');
    });

    for (const lang of ['en', 'ar']) {
      await t.test(`axe: no serious or critical violation in ${lang}`, async (t) => {
        const audit = await browser.newContext({ bypassCSP: true });
        await audit.addCookies(await context.cookies(cp));
        const p = await audit.newPage();
        for (const path of [
          '/console',
          '/console/accounts',
          `/console/accounts/${cy.id}`,
          '/console/clients',
          `/console/receipts?hash=${disabledReceipt}`,
          `/console/orgs/${orgSlug}`,
          '/console/receipts?type=account.disabled',
          '/console/agents',
          '/console/webhooks',
          '/console/streams',
        ]) {
          await p.goto(`${cp}${path}${path.includes('?') ? '&' : '?'}lang=${lang}`);
          if (lang === 'ar') t.equal(await p.getAttribute('html', 'dir'), 'rtl', `${path} is right-to-left`);
          const bad = await seriousViolations(p);
          t.same(bad, [], `${path} in ${lang}`);
        }
        await audit.close();
      });
    }
  },
);
