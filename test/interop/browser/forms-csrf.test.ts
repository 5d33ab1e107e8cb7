import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Response } from 'playwright-core';
import { loadGatewayConfig } from '#config/load.js';
import { DEMO_POLICY, ensureDemoGatewayClient } from '../../../cli/src/demo/demo-clients.js';
import { registerProvider } from '../../../control-plane/src/saml/providers.js';
import { startGateway } from '../../../gateway/src/server.js';
import { generateSamlKey } from '#lib/saml/certificate.js';
import { computeS256Challenge } from '#lib/pkce/check-pkce.js';
import { escapeHtml } from '#lib/html/escape-html.js';
import { agentKey, postWithKeyProof } from '../../helpers/agents.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir } from '../../helpers/build.js';
import { LiveBrowser, registerLiveClient, startLiveControlPlane } from '../../helpers/live-browser.js';
import { linkIn, readOutbox } from '../../helpers/smtp.js';
import { ELSEWHERE, formCases, formTags, type Answer, type FormCase, type Places } from './form-cases.js';

/**
 * Every HTML form of the control plane and the gateway (docs/security.md#csrf-on-forms), in
 * Debian's Chromium: each is sent as its page sends it (a plain form post under
 * `Referrer-Policy: no-referrer` carries `Origin: null`, and must still pass) and the same request
 * is forged from another origin on the same site, which carries the session cookie, and refused.
 * The first test lists the `<form` tags of the page templates: a form no case covers fails it.
 */

/** A refusal of the CSRF check: 403 naming `origin_mismatch` (envelope or HTML page). */
function refusedAsForeign(answer: Answer): boolean {
  return answer.status === 403 && answer.body.includes('origin_mismatch');
}

async function answerOf(response: Response): Promise<Answer> {
  // A redirect has no body to read.
  const body = await response.text().catch(() => '');
  return { status: response.status(), body, url: response.url(), location: response.headers()['location'] };
}

const skip = chromiumSkip(t, 'browser forms CSRF suite');

t.test('every form of the control plane and the gateway is exercised below', { skip }, async (t) => {
  const cases = formCases(() => {
    throw new Error('not opened');
  });
  const covers = [...cases.filter((c) => !c.sharedTag), ...ELSEWHERE];
  for (const { source, tag } of formTags()) {
    const covering = covers.filter((c) => c.source === source && c.tag.test(tag));
    t.equal(covering.length, 1, `${source}: ${tag} is covered by exactly one case (add one to this file)`);
  }
  t.ok(formTags().length >= covers.length, 'every case names a form that exists');
});

t.test(
  "each form works as its page sends it and is refused when another origin's page sends it",
  { skip, timeout: 400_000 },
  async (t) => {
    const dataDir = tempDir(t);
    const server = await startLiveControlPlane(t, {
      dataDir,
      // The whole walk runs on one step-up, however loaded the machine.
      'lifetimes.stepUp': 3600,
    });
    const cp = server.url;

    // Another origin on the same site (another port of localhost): the browser sends the session
    // cookie (SameSite=Lax) and `Sec-Fetch-Site: same-site`. It also stands in for the apps' callbacks
    // and the gateway's upstream.
    const evilServer = createServer((req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? '/', 'http://x');
      res.setHeader('content-type', 'text/html; charset=utf-8');
      if (url.pathname !== '/forge') return res.end('<!doctype html><title>elsewhere</title><p>elsewhere</p>');
      const target = url.searchParams.get('url')!;
      const body = url.searchParams.get('body') ?? '';
      if (url.searchParams.get('type') === 'form') {
        const inputs = [...new URLSearchParams(body)]
          .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
          .join('');
        return res.end(
          `<!doctype html><form method="post" action="${escapeHtml(target)}">${inputs}</form><script>document.forms[0].submit()</script>`,
        );
      }
      // JSON cannot be sent across origins without CORS: the forgery sends the same text as text/plain.
      return res.end(
        `<!doctype html><script>fetch(${JSON.stringify(target)}, {method: 'POST', mode: 'no-cors', credentials: 'include', headers: {'content-type': 'text/plain'}, body: ${JSON.stringify(body)}})</script>`,
      );
    });
    await new Promise<void>((resolve) => evilServer.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise((resolve) => evilServer.close(resolve)));
    const evil = `http://localhost:${(evilServer.address() as AddressInfo).port}`;

    const gatewayServer = createServer();
    await new Promise<void>((resolve) => gatewayServer.listen(0, '127.0.0.1', resolve));
    const gatewayPort = (gatewayServer.address() as AddressInfo).port;
    await new Promise((resolve) => gatewayServer.close(resolve));
    const gatewayUrl = `http://localhost:${gatewayPort}`;
    const gatewayClient = await ensureDemoGatewayClient(server.services, { gatewayUrl, policy: DEMO_POLICY });
    const gateway = await startGateway(
      loadGatewayConfig({
        overrides: {
          host: '127.0.0.1',
          port: gatewayPort,
          publicUrl: gatewayUrl,
          controlPlane: cp,
          upstream: evil,
          clientId: gatewayClient.clientId,
          clientSecret: gatewayClient.clientSecret,
          dataDir: join(dataDir, 'gateway'),
          logLevel: 'warn',
        },
      }),
      {
        logStream: new Writable({
          write(_c, _e, done) {
            done();
          },
        }),
      },
    );
    t.teardown(() => gateway.close());

    const client = await registerLiveClient(cp, {
      redirect_uris: [`${evil}/cb`],
      token_endpoint_auth_method: 'none',
      scope: 'openid',
    });
    const gatedClient = await registerLiveClient(cp, {
      redirect_uris: [`${evil}/cb`],
      token_endpoint_auth_method: 'none',
      scope: 'openid',
      access: { orgs: [{ slug: 'bob-co', roles: ['owner'] }] },
    });
    const agentClient = await registerLiveClient(cp, {
      redirect_uris: [`${evil}/cb`],
      grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:jwt-bearer'],
      scope: 'openid notes:read',
      access: { humans: true, agents: true },
    });
    const deviceClient = await registerLiveClient(cp, {
      grant_types: ['urn:ietf:params:oauth:grant-type:device_code'],
      token_endpoint_auth_method: 'none',
      scope: 'openid',
    });
    let emailLink = '';
    let recoveryCode = '';
    let agentId = '';
    const places: Places = {
      cp,
      gateway: gatewayUrl,
      evil,
      slug: 'ada-shop',
      clientId: client['client_id'] as string,
      emailLink: () => emailLink,
      recoveryCode: () => recoveryCode,
      challenge: computeS256Challenge('v'.repeat(43)),
      gatedClientId: gatedClient['client_id'] as string,
      agentClientId: agentClient['client_id'] as string,
      agentId: () => agentId,
      userCode: async () => {
        const res = await fetch(`${cp}/auth/device`, {
          method: 'POST',
          body: new URLSearchParams({ client_id: deviceClient['client_id'] as string, scope: 'openid' }),
        });
        if (res.status !== 200) throw new Error(`device authorization: ${res.status} ${await res.text()}`);
        return ((await res.json()) as { user_code: string }).user_code;
      },
    };

    const { browser, context, page, problems, addAuthenticator } = await launchChromium(t);
    page.on('dialog', (dialog) => void dialog.accept());
    await addAuthenticator();
    const attacker = await context.newPage();

    const outsider = await (await browser.newContext()).newPage();
    const pageFor = (c: FormCase) => (c.signedOut ? outsider : page);

    /** The request the form sends, taken (and stopped) before it reaches the server. */
    async function capture(c: FormCase, origin: string): Promise<{ url: string; type: string; body: string }> {
      const page = pageFor(c);
      let taken: { url: string; type: string; body: string } | undefined;
      await openAndFill(c);
      await page.route(`${origin}/**`, async (route) => {
        const request = route.request();
        if (request.method() !== 'POST' || taken) return route.continue();
        taken = { url: request.url(), type: request.headers()['content-type'] ?? '', body: request.postData() ?? '' };
        return route.abort();
      });
      try {
        await page.click(submitButton(c));
        const until = Date.now() + 15_000;
        while (!taken && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
      } finally {
        await page.unrouteAll({ behavior: 'ignoreErrors' });
      }
      if (!taken) throw new Error(`${c.form}: the form sent nothing; ${problems.join('; ')}`);
      return taken;
    }

    async function openAndFill(c: FormCase): Promise<void> {
      const page = pageFor(c);
      // WebAuthn answers only the page in front, and the forging page came to the front.
      await page.bringToFront();
      await page.goto(c.open());
      await page.waitForSelector(c.form, { state: 'attached', timeout: 10_000 }).catch((error) => {
        throw new Error(`${c.form} is not on ${page.url()}: ${error}`);
      });
      await c.fill?.(page);
    }

    const submitButton = (c: FormCase) => `${c.form} ${c.button ?? 'button[type="submit"]'}`;

    async function send(c: FormCase, origin: string): Promise<Answer> {
      const page = pageFor(c);
      await openAndFill(c);
      const responded = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().startsWith(origin), {
        timeout: 20_000,
      });
      // What the submission does next must be over before the next case navigates this page: a plain
      // form post loads its answer (after any redirect); a script's call that succeeded reloads the page
      // or moves on (forms.js, act() after a pause), unless the case says its page stays, and a late
      // reload would interrupt the next case's goto. (The status decides: the body of a call whose page
      // reloads at once may be gone before it can be read.)
      const loaded = page.waitForEvent('load', { timeout: 20_000 });
      loaded.catch(() => undefined);
      await page.click(submitButton(c));
      const response = await responded;
      const answer = await answerOf(response);
      const plainPost = response.request().resourceType() === 'document';
      if (plainPost || (answer.status < 300 && !c.stays)) {
        await loaded.catch((error) => {
          throw new Error(`${c.form}: the page did not move on after ${answer.status} (at ${page.url()}): ${error}`);
        });
      }
      return answer;
    }

    async function forge(sent: { url: string; type: string; body: string }): Promise<Answer> {
      const kind = sent.type.startsWith('application/x-www-form-urlencoded') ? 'form' : 'text';
      const responded = attacker.waitForResponse((r) => r.url() === sent.url && r.request().method() === 'POST', {
        timeout: 20_000,
      });
      await attacker.goto(`${evil}/forge?${new URLSearchParams({ url: sent.url, type: kind, body: sent.body })}`);
      return answerOf(await responded);
    }

    for (const c of formCases(() => places)) {
      const name = `${c.source.replace(/^.*\/(routes\/)?/, '')} ${c.form}`;
      const origin = c.at === 'gateway' ? gatewayUrl : cp;
      await t.test(name, async (t) => {
        const sent = await capture(c, origin);
        const forged = await forge(sent);
        const json = !sent.type.startsWith('application/x-www-form-urlencoded');
        t.ok(
          refusedAsForeign(forged) || (json && forged.status >= 400 && forged.status < 500),
          `forged from ${evil}: refused (${forged.status} ${forged.body.slice(0, 120)})`,
        );
        const answer = await send(c, origin);
        t.notOk(refusedAsForeign(answer), `as the page sends it: not refused as another site's (${answer.status})`);
        // 502 is a scanned site that did not answer, not ours.
        t.not(answer.status, 500, `no internal error (${answer.status} ${answer.body.slice(0, 120)})`);
        await c.then?.(t, answer);
      });
      await afterCase(c);
    }

    /** What the next cases need from this one: a second site, an invite, a mailed link, backup codes, a gateway session. */
    async function afterCase(c: FormCase): Promise<void> {
      if (c.form === '#auth-form') {
        await page.waitForURL(`${cp}/account`, { timeout: 20_000 }).catch(async (error) => {
          throw new Error(
            `no account page after sign-up (at ${page.url()}: ${await page
              .locator('#status')
              .textContent()
              .catch(() => '')}): ${problems.join('; ')}; ${error}`,
          );
        });
        // Bob invites Ada to his org, so the account page has an invite to accept.
        const bob = new LiveBrowser(cp);
        await bob.signUp('bob');
        await bob.postJson(`${cp}/auth/orgs/create`, { name: 'Bob Co' });
        await bob.postJson(`${cp}/org/bob-co/members/invite`, { username: 'ada', role: 'member' });
      }
      if (c.form === '#step-up-form') {
        await page.waitForURL(`${cp}/account`, { timeout: 20_000 });
        await page.click('button[data-sf-action="recovery-regenerate"]');
        await page.waitForSelector('#recovery-panel:not([hidden])', { timeout: 10_000 });
        recoveryCode = (await page.locator('#recovery-codes li').first().textContent())!.trim();
      }
      if (c.form === 'form[data-sf-form="email-add"]') {
        await server.services.mailer.idle();
        const mails = await readOutbox(dataDir);
        emailLink = linkIn(mails.at(-1)!, '/auth/email/verify')!;
      }
      if (c.form === 'form[action$="/websites/add"]') {
        // A second site, so one row is not primary.
        const added = await page.evaluate(
          async (slug) =>
            (
              await fetch(`/org/${slug}/websites/add`, {
                method: 'POST',
                headers: { 'content-type': 'application/json', accept: 'application/json' },
                body: JSON.stringify({ url: 'https://other.example/' }),
              })
            ).status,
          places.slug,
        );
        if (added !== 200) throw new Error(`second site: ${added}`);
      }
      if (c.form === 'form[action="/auth/orgs/create"]') {
        const sp = await generateSamlKey({ commonName: 'SP', now: Date.now(), validDays: 30, modulusLength: 2048 });
        await registerProvider(
          server.services,
          { kind: 'operator' },
          {
            org: places.slug,
            entity_id: 'https://sp.example.com/saml',
            acs_urls: ['https://sp.example.com/saml/acs'],
            certificate: sp.certificatePem,
          },
        );
      }
      if (c.form === '#approve') {
        // An agent of Ada's, for its grant form: begun by the agent, approved on the page, completed with
        // a DPoP proof by its key.
        const key = await agentKey();
        const begun = (await (
          await fetch(`${cp}/auth/agents/proof/enroll/begin`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ name: 'Notes bot', subjectKind: 'ai_agent', publicJwk: key.jwk }),
          })
        ).json()) as { enrollment_id: string; owner_code: string };
        await page.goto(`${cp}/account/agents?enrollment=${begun.enrollment_id}`);
        await page.fill('input[name="owner_code"]', begun.owner_code);
        const reloaded = page.waitForEvent('load', { timeout: 20_000 });
        await page.click('button[data-action="approve"]');
        await reloaded;
        const completeUrl = `${cp}/auth/agents/proof/enroll/complete`;
        const done = await postWithKeyProof(
          async (headers) => {
            const res = await fetch(completeUrl, {
              method: 'POST',
              headers: { 'content-type': 'application/json', ...headers },
              body: JSON.stringify({ enrollment_id: begun.enrollment_id }),
            });
            const body = await res.json();
            return { statusCode: res.status, headers: Object.fromEntries(res.headers), json: () => body };
          },
          { ...key, proof: (_path, o) => key.proof(completeUrl, o) },
          completeUrl,
        );
        if (done.statusCode !== 200) throw new Error(`agent enrollment: ${JSON.stringify(done.json())}`);
        agentId = (done.json() as { agent_id: string }).agent_id;
      }
      if (c.form === 'form[data-action="continue"]') {
        // A gateway session, for the gateway's sign-out form: the operator's first-party gateway asks nothing.
        await page.goto(`${gatewayUrl}/`);
        await page.waitForURL(`${gatewayUrl}/`, { timeout: 20_000 });
      }
    }
  },
);
