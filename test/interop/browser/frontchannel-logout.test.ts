import t from 'tap';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { LIVE_ADMIN, startLiveControlPlane } from '../../helpers/live-browser.js';

/**
 * OpenID Connect Front-Channel Logout 1.0 in Chromium: an app signs the person out through the
 * end-session endpoint; the signed-out page loads, in iframes its CSP admits, the front-channel
 * logout URL of every app that got tokens in that session (with `iss` and `sid`), and only then
 * continues to the asking app's post_logout_redirect_uri. An app registered with a front-channel
 * URL that the session never used is not told.
 */

const skip = chromiumSkip(t, 'front-channel logout suite');

t.test('front-channel logout in Chromium', { skip }, async (t) => {
  const server = await startLiveControlPlane(t);
  const hits: Array<{ path: string; query: URLSearchParams; dest: string | undefined }> = [];
  const rp = createServer((req: IncomingMessage, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname.startsWith('/frontchannel'))
      hits.push({ path: url.pathname, query: url.searchParams, dest: req.headers['sec-fetch-dest'] as string });
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>RP</title><h1>RP ${url.pathname}</h1>`);
  });
  await new Promise<void>((resolve) => rp.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => rp.close(() => resolve())));
  const rpOrigin = `http://localhost:${(rp.address() as AddressInfo).port}`;

  async function register(name: string, extra: Record<string, unknown>) {
    const res = await fetch(`${server.url}/register`, {
      method: 'POST',
      headers: { authorization: `Bearer ${LIVE_ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: name,
        redirect_uris: [`${rpOrigin}/callback/${name}`],
        post_logout_redirect_uris: [`${rpOrigin}/bye`],
        token_endpoint_auth_method: 'none',
        ...extra,
      }),
    });
    t.equal(res.status, 201, `${name} registered`);
    return (await res.json()) as { client_id: string; frontchannel_logout_uri?: string };
  }
  const notes = await register('notes', {
    frontchannel_logout_uri: `${rpOrigin}/frontchannel/notes?tenant=1`,
    frontchannel_logout_session_required: true,
  });
  t.equal(notes.frontchannel_logout_uri, `${rpOrigin}/frontchannel/notes?tenant=1`, 'echoed');
  const wiki = await register('wiki', { frontchannel_logout_uri: `${rpOrigin}/frontchannel/wiki` });
  const unused = await register('unused', { frontchannel_logout_uri: `${rpOrigin}/frontchannel/unused` });
  const plain = await register('plain', {});

  const discovery = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<
    string,
    unknown
  >;
  t.equal(discovery.frontchannel_logout_supported, true);
  t.equal(discovery.frontchannel_logout_session_supported, true);

  const { page, problems, addAuthenticator } = await launchChromium(t);
  await addAuthenticator();
  const cspViolations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });

  /** Runs the code flow for one client in the browser and redeems the code: the ID token. */
  async function signInTo(client: { client_id: string }, name: string, signUp: boolean): Promise<string> {
    const verifier = randomBytes(32).toString('base64url');
    const callback = `${rpOrigin}/callback/${name}`;
    await page.goto(
      `${server.url}/auth/authorize?${new URLSearchParams({
        client_id: client.client_id,
        redirect_uri: callback,
        response_type: 'code',
        scope: 'openid',
        state: `st-${name}`,
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      })}`,
    );
    if (signUp) {
      await page.fill('input[name="username"]', 'frontchannel');
      await page.click('button[data-action="signup"]');
    }
    await page.waitForSelector('form[data-action="continue"]', { timeout: 20_000 });
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(callback), { timeout: 20_000 }),
      page.click('form[data-action="continue"] button[value="allow"]'),
    ]);
    const code = new URL(page.url()).searchParams.get('code')!;
    const token = await fetch(`${server.url}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: callback,
        client_id: client.client_id,
        code_verifier: verifier,
      }),
    });
    t.equal(token.status, 200, `${name}: tokens`);
    return ((await token.json()) as { id_token: string }).id_token;
  }

  const notesIdToken = await signInTo(notes, 'notes', true);
  await signInTo(wiki, 'wiki', false);
  await signInTo(plain, 'plain', false);
  const sid = decodeJwt(notesIdToken).sid as string;
  t.match(sid, /\S/, 'the ID token names the session');

  await t.test('the signed-out page tells every app of the session, then returns to the asking app', async (t) => {
    await page.goto(
      `${server.url}/auth/logout?${new URLSearchParams({
        id_token_hint: notesIdToken,
        post_logout_redirect_uri: `${rpOrigin}/bye`,
        state: 'st-bye',
      })}`,
    );
    await page
      .waitForURL((url) => url.pathname === '/bye', { timeout: 20_000 })
      .catch((error) => {
        throw new Error(`never returned to the app: ${page.url()} ${problems.join(' | ')} ${error}`);
      });
    t.equal(new URL(page.url()).searchParams.get('state'), 'st-bye');
    t.same(
      hits.map((hit) => hit.path).sort(),
      ['/frontchannel/notes', '/frontchannel/wiki'],
      'the unused app is not told',
    );
    for (const hit of hits) {
      t.equal(hit.query.get('iss'), server.url, `${hit.path}: iss`);
      t.equal(hit.query.get('sid'), sid, `${hit.path}: sid of the ended session`);
      t.equal(hit.dest, 'iframe', `${hit.path}: loaded in an iframe`);
    }
    t.equal(hits.find((hit) => hit.path === '/frontchannel/notes')?.query.get('tenant'), '1', 'its own query kept');
    t.same(cspViolations, [], 'the iframes passed the page CSP');
    t.notOk(unused.client_id === notes.client_id);
  });

  await t.test('the session is over: the next authorization asks for a sign-in', async (t) => {
    await page.goto(
      `${server.url}/auth/authorize?${new URLSearchParams({
        client_id: wiki.client_id,
        redirect_uri: `${rpOrigin}/callback/wiki`,
        response_type: 'code',
        scope: 'openid',
        prompt: 'none',
        code_challenge: createHash('sha256').update('x'.repeat(43)).digest('base64url'),
        code_challenge_method: 'S256',
      })}`,
    );
    t.equal(new URL(page.url()).searchParams.get('error'), 'login_required');
  });
});
