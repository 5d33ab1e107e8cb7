import t from 'tap';
import * as client from 'openid-client';
import { generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { connectionView, createConnection } from '../../../control-plane/src/federation/connections.js';
import { seedAcmeOwner } from '../../helpers/mail-domains.js';
import { ADMIN, CookieJar, browse, configure, register, start } from '../../helpers/openid-client.js';
import { startAtKeyplane, startUpstreamOidc } from '../../helpers/upstream-oidc.js';
import { until } from '../../helpers/until.js';

/**
 * Logout both ways with a connection's upstream (docs/federation.md#signing-out), against
 * node-oidc-provider, over HTTP as a browser and the upstream send it: signing out of a federated
 * session goes on to the upstream's end_session_endpoint and back; the upstream's back-channel
 * logout token ends the Keyplane sessions its session started and tells Keyplane's own apps; and
 * every logout token that must be refused is (OpenID Connect Back-Channel Logout 1.0 §2.6, §2.8).
 */
const SECRET = 'upstream-client-secret-0123456789';
const EVENT = { 'http://schemas.openid.net/event/backchannel-logout': {} };

t.test('upstream logout', async (t) => {
  const upstream = await startUpstreamOidc(t);
  const server = await start(t, { fetch: { allowPrivateTargets: true, caFile: upstream.tls.caFile } });
  const base = server.url;
  const { storage } = server.services;
  const now = Date.now();
  await seedAcmeOwner(storage, now);
  const { connection } = await createConnection(
    server.services,
    { orgId: 'org_acme', actor: { type: 'person', id: 'usr_owner' } },
    {
      type: 'oidc',
      name: 'Acme SSO',
      oidc: { issuer: upstream.issuer, client_id: 'keyplane', client_secret: SECRET },
      domains: ['acme.example'],
      jit: { role: 'member' },
    },
  );
  const { connectionId } = connection;
  const loggedOut = `${base}/federation/${connectionId}/logged-out`;
  const backchannel = `${base}/federation/${connectionId}/backchannel-logout`;
  upstream.addClient({
    client_id: 'keyplane',
    client_secret: SECRET,
    redirect_uris: [`${base}/federation/${connectionId}/callback`],
    post_logout_redirect_uris: [loggedOut],
    backchannel_logout_uri: backchannel,
    backchannel_logout_session_required: true,
    token_endpoint_auth_method: 'client_secret_basic',
  });

  /** A person signs in through the connection: Keyplane's discovery and start, the upstream's pages, the callback. */
  const federatedSignIn = async (login: string) => {
    const { cookie, authorizationUrl } = await startAtKeyplane(base, login);
    const at = upstream.browser();
    const landed = await fetch(await at.signIn(authorizationUrl, login), { redirect: 'manual', headers: { cookie } });
    t.equal(landed.status, 303, 'signed in');
    const jar = new CookieJar();
    jar.absorb(landed);
    return { jar, upstream: at };
  };
  const live = async (jar: CookieJar) =>
    (await fetch(`${base}/account`, { headers: { cookie: jar.header(), accept: 'application/json' } })).status === 200;
  const receipts = async (type: string) =>
    (
      (await (
        await fetch(`${base}/admin/receipts?type=${type}`, { headers: { authorization: `Bearer ${ADMIN}` } })
      ).json()) as { receipts: Array<Record<string, any>> }
    ).receipts;

  t.test('the connection names the logout URLs to register upstream', async (t) => {
    const res = await fetch(`${base}/admin/connections`, { headers: { authorization: `Bearer ${ADMIN}` } });
    const { connections } = (await res.json()) as { connections: Array<Record<string, unknown>> };
    t.match(connections, [], "the operator's list holds no org connection");
    t.match(connectionView(base, connection), {
      post_logout_redirect_uri: loggedOut,
      backchannel_logout_uri: backchannel,
    });
  });

  t.test("signing out of a federated session goes on to the upstream's end_session_endpoint and back", async (t) => {
    const { jar, upstream: at } = await federatedSignIn('ada@acme.example');
    t.ok(await live(jar));
    const res = await fetch(`${base}/auth/signout`, {
      method: 'POST',
      headers: { cookie: jar.header(), origin: base, accept: 'application/json' },
    });
    const body = (await res.json()) as { ok: boolean; upstream_logout?: string };
    t.equal(body.ok, true);
    t.notOk(await live(jar), 'the Keyplane session ended at once');
    const next = new URL(body.upstream_logout!);
    t.equal(`${next.origin}${next.pathname}`, `${upstream.issuer}/session/end`, "the upstream's end_session_endpoint");
    t.equal(next.searchParams.get('post_logout_redirect_uri'), loggedOut);
    t.ok(next.searchParams.get('id_token_hint'), 'with the upstream ID token as id_token_hint');
    const back = await at.logOut(next.href);
    t.match(back, new RegExp(`^${loggedOut}\\?state=`), 'the upstream sends the browser back');
    const landed = await fetch(back!, { redirect: 'manual' });
    t.equal(landed.status, 302);
    t.equal(landed.headers.get('location'), '/auth?done=signed-out');
    const again = await fetch(back!, { redirect: 'manual' });
    t.equal(again.headers.get('location'), '/auth?done=signed-out', 'a used state goes to the signed-out page too');
  });

  t.test("an app's RP-initiated logout of a federated session passes through the upstream", async (t) => {
    const { jar } = await federatedSignIn('ada@acme.example');
    const app = await register(base, { first_party: true });
    const config = await configure(base, app);
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: 'http://localhost:9/callback',
      scope: 'openid',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const callback = await browse(url, jar, base);
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier });
    const logout = client.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: 'http://localhost:9/',
      state: 'app-state',
    });
    const res = await fetch(logout, { redirect: 'manual', headers: { cookie: jar.header() } });
    t.equal(res.status, 302);
    const next = new URL(res.headers.get('location')!);
    t.equal(next.origin, upstream.issuer, 'to the upstream first');
    t.notOk(await live(jar));
    const back = await upstream.browser().logOut(next.href);
    const landed = await fetch(back!, { redirect: 'manual' });
    t.equal(landed.headers.get('location'), 'http://localhost:9/?state=app-state', "then to the app's own redirect");
  });

  t.test("the upstream's back-channel logout ends the sessions its session started, and tells the apps", async (t) => {
    const ada = await federatedSignIn('ada@acme.example');
    const other = await federatedSignIn('ada@acme.example');
    // An app that got tokens in Ada's session, with a back-channel logout URL of its own.
    const app = await register(base, { first_party: true, backchannel_logout_uri: 'https://localhost:9/bcl' });
    const config = await configure(base, app);
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: 'http://localhost:9/callback',
      scope: 'openid',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    await client.authorizationCodeGrant(config, await browse(url, ada.jar, base), { pkceCodeVerifier: verifier });
    const queued = (await receipts('logout.backchannel_queued')).length;

    // Ada signs out at the upstream itself: it posts its logout token to Keyplane.
    await ada.upstream.logOut(`${upstream.issuer}/session/end`);
    await until('the Keyplane session ends', async () => ((await live(ada.jar)) ? undefined : true));
    t.ok(await live(other.jar), 'a session another upstream session started stays');
    const ended = await receipts('federation.logged_out');
    t.equal(ended.length, 1);
    t.match(ended[0], { receipt: { connectionId, actor: { type: 'connection', id: connectionId } } });
    const onward = await receipts('logout.backchannel_queued');
    t.equal(onward.length, queued + 1, "Keyplane's own back-channel logout to the app");
    t.match(onward.at(-1), { receipt: { clientId: app.client_id } });
  });

  t.test('a logout token that must be refused is 400 invalid_request', async (t) => {
    const { jar } = await federatedSignIn('bob@acme.example');
    const iat = Math.floor(Date.now() / 1000);
    const good: JWTPayload = {
      iss: upstream.issuer,
      aud: 'keyplane',
      iat,
      jti: '',
      sub: 'bob@acme.example',
      events: EVENT,
    };
    let n = 0;
    const post = async (token: string) => {
      const res = await fetch(backchannel, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ logout_token: token }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const refusedWith = async (claims: JWTPayload, why: string, header?: { typ?: string }) => {
      const answer = await post(await upstream.sign({ ...good, jti: `jti-${n++}`, ...claims }, header));
      t.equal(answer.status, 400, why);
      t.match(answer.body, { ok: false, reason: 'invalid_request', error: 'invalid_request' }, why);
    };
    const other = await generateKeyPair('RS256');
    const forged = await new SignJWT({ ...good, jti: 'forged' })
      .setProtectedHeader({ alg: 'RS256', kid: 'upstream-test-key' })
      .sign(other.privateKey);
    t.equal((await post(forged)).status, 400, 'a bad signature');
    t.equal((await post('not.a.jwt')).status, 400, 'not a JWT');
    await refusedWith({ aud: 'someone-else' }, 'another audience');
    await refusedWith({ iss: 'https://idp.attacker.example' }, 'another issuer');
    await refusedWith({ events: undefined }, 'no events');
    await refusedWith({ events: { 'http://schemas.openid.net/event/other': {} } }, 'no back-channel logout event');
    await refusedWith({ nonce: 'n' }, 'a nonce');
    await refusedWith({ sub: undefined }, 'neither sid nor sub');
    await refusedWith({ iat: iat - 3600 }, 'too old');
    await refusedWith({ jti: undefined }, 'no jti');
    await refusedWith({}, 'an ID token typ', { typ: 'at+jwt' });
    const missing = await fetch(backchannel, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    t.equal(missing.status, 400, 'no logout_token');
    t.ok(await live(jar), 'none of them ended the session');

    const token = await upstream.sign({ ...good, jti: 'once' }, { typ: 'logout+jwt' });
    t.same((await post(token)).body, { ok: true, ended: 1 }, 'a good one by sub ends the session');
    t.notOk(await live(jar));
    const replay = await post(token);
    t.equal(replay.status, 400, 'a replayed jti');
    t.match(replay.body, { reason: 'invalid_request' });
  });
});
