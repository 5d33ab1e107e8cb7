import t from 'tap';
import * as client from 'openid-client';
import { CALLBACK, CookieJar, browse, passkeySignUp, register, start } from '../../helpers/openid-client.js';

/**
 * A client restricted to an org's members (`access.orgs`, docs/orgs.md#who-may-sign-in-to-an-app)
 * with openid-client v6 as the relying party: a member gets tokens; a non-member is shown why,
 * and the relying party then receives the standard `error=access_denied`; a receipt is left.
 */

function hiddenFields(html: string): URLSearchParams {
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    form.append(
      m[1]!,
      m[2]!
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&amp;/g, '&'),
    );
  return form;
}

async function postJson(base: string, jar: CookieJar, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { cookie: jar.header(), origin: base, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
}

t.test('openid-client: an org-restricted client admits members and refuses others with access_denied', async (t) => {
  const server = await start(t);
  const base = server.url;
  const owner = await passkeySignUp(base, 'acme-owner');
  const stranger = await passkeySignUp(base, 'stranger');
  await postJson(base, owner, '/auth/orgs/create', { name: 'Acme' });
  const registered = await register(base, {
    token_endpoint_auth_method: 'client_secret_basic',
    access: { orgs: [{ slug: 'ACME', roles: ['owner', 'admin'] }] },
  });
  t.same(registered.access.orgs, [{ slug: 'acme', roles: ['owner', 'admin'] }], 'stored with the slug folded');
  const config = await client.discovery(
    new URL(base),
    registered.client_id,
    registered.client_secret,
    client.ClientSecretBasic(registered.client_secret),
    { execute: [client.allowInsecureRequests] },
  );
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });

  await t.test('an owner of the org signs in', async (t) => {
    const callback = await browse(url, owner, base);
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    t.equal(tokens.claims()!.preferred_username, 'acme-owner');
  });

  await t.test('a non-member is shown why, then the relying party gets access_denied', async (t) => {
    const page = await fetch(url, { redirect: 'manual', headers: { cookie: stranger.header() } });
    t.equal(page.status, 403);
    const html = await page.text();
    t.match(html, /data-field="account">stranger</);
    t.match(html, /owners or admins of the org acme/);
    const form = hiddenFields(html);

    // The page's approval token is no way around the rule: "allow" shows the same refusal.
    const forged = new URLSearchParams(form);
    forged.set('decision', 'allow');
    const again = await fetch(`${base}/auth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: stranger.header(), origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: forged,
    });
    t.equal(again.status, 403, 'no code for a forged approval');
    const fresh = hiddenFields(await again.text());

    fresh.set('decision', 'not_admitted');
    const back = await fetch(`${base}/auth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: stranger.header(), origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: fresh,
    });
    const location = back.headers.get('location')!;
    t.ok(location.startsWith(CALLBACK), `back to the client: ${back.status} ${location}`);
    const callback = new URL(location);
    t.equal(callback.searchParams.get('error'), 'access_denied');
    const error = await client
      .authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state })
      .then(
        () => null,
        (caught: unknown) => caught as { error?: string },
      );
    t.equal(error?.error, 'access_denied', 'openid-client reports the standard error');

    const metrics = await (await fetch(`${base}/metrics`)).text();
    t.match(metrics, /keyplane_receipts_total\{kind="signin\.access_denied"\} [1-9]/, 'a receipt of the refusal');
  });

  await t.test('with prompt=none there is no page: access_denied at once', async (t) => {
    const silent = client.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope: 'openid',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      prompt: 'none',
    });
    const res = await fetch(silent, { redirect: 'manual', headers: { cookie: stranger.header() } });
    const location = new URL(res.headers.get('location')!);
    t.equal(location.searchParams.get('error'), 'access_denied');
  });
});
