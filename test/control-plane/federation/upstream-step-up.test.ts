import t from 'tap';
import { createConnection } from '../../../control-plane/src/federation/connections.js';
import { seedAcmeOwner } from '../../helpers/mail-domains.js';
import { ADMIN, CookieJar, start } from '../../helpers/openid-client.js';
import { startAtKeyplane, startUpstreamOidc } from '../../helpers/upstream-oidc.js';

/**
 * Step-up at the upstream (docs/federation.md#step-up-at-the-upstream), against node-oidc-provider
 * over HTTP: an account the org manages that has no passkey confirms a step-up by signing in again
 * at its org's identity provider (`prompt=login`, `max_age=0`); the callback checks `auth_time`
 * and that the same person came back, and renews the same session at what the upstream proved
 * (never `sensitive`).
 */
const SECRET = 'upstream-client-secret-0123456789';

t.test('step-up at the upstream', async (t) => {
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
      oidc: { issuer: upstream.issuer, client_id: 'keyplane', client_secret: SECRET },
      domains: ['acme.example'],
      jit: { role: 'member' },
    },
  );
  const { connectionId } = connection;
  upstream.addClient({
    client_id: 'keyplane',
    client_secret: SECRET,
    redirect_uris: [`${base}/federation/${connectionId}/callback`],
    token_endpoint_auth_method: 'client_secret_basic',
  });
  const receipts = async (type: string) =>
    (
      (await (
        await fetch(`${base}/admin/receipts?type=${type}`, { headers: { authorization: `Bearer ${ADMIN}` } })
      ).json()) as { receipts: Array<Record<string, any>> }
    ).receipts;

  /** Ada signs in through the connection (JIT makes her managed account, without a passkey). */
  const signedIn = async () => {
    const { cookie, authorizationUrl } = await startAtKeyplane(base, 'ada@acme.example');
    const landed = await fetch(await upstream.browser().signIn(authorizationUrl, 'ada@acme.example'), {
      redirect: 'manual',
      headers: { cookie },
    });
    t.equal(landed.status, 303, 'signed in');
    const jar = new CookieJar();
    for (const pair of cookie.split('; ')) jar.cookies.set(pair.split('=')[0]!, pair.slice(pair.indexOf('=') + 1));
    jar.absorb(landed);
    return jar;
  };
  const sessionOf = async (jar: CookieJar) => {
    const res = await fetch(`${base}/account?format=json`, { headers: { cookie: jar.header() } });
    return res.status === 200 ? ((await res.json()) as { identityId: string }) : null;
  };
  const startStepUp = (jar: CookieJar, origin = base) =>
    fetch(`${base}/auth/step-up/upstream`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'return=%2Fagents',
    });

  await t.test('signs in again upstream, checks auth_time, and renews the same session', async (t) => {
    const jar = await signedIn();
    const ada = (await sessionOf(jar))!.identityId;
    const [before] = await storage.sessions.listLive(ada, Date.now());
    const page = await fetch(`${base}/auth/step-up?return=/agents`, { headers: { cookie: jar.header() } });
    const html = await page.text();
    t.match(html, /id="step-up-upstream-form"/, 'the step-up page offers the upstream');
    t.match(html, /Sign in again at Acme SSO/);
    t.notMatch(html, /data-action="step-up"/, 'no passkey to use');
    t.match(
      page.headers.get('content-security-policy'),
      `form-action 'self' ${upstream.issuer}`,
      'its form may end upstream',
    );

    const started = await startStepUp(jar);
    t.equal(started.status, 303);
    const to = new URL(started.headers.get('location')!);
    t.equal(to.origin, upstream.issuer);
    t.equal(to.searchParams.get('prompt'), 'login');
    t.equal(to.searchParams.get('max_age'), '0');
    jar.absorb(started);
    // Later than the first sign-in's second: auth_time must move.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const back = await upstream.browser().signIn(to.href, 'ada@acme.example');
    const landed = await fetch(back, { redirect: 'manual', headers: { cookie: jar.header() } });
    t.equal(landed.status, 303, await landed.clone().text());
    t.equal(landed.headers.get('location'), '/agents', 'back where the step-up was going');
    jar.absorb(landed);
    const [after] = await storage.sessions.listLive(ada, Date.now());
    t.equal(after!.sessionId, before!.sessionId, 'the same session');
    t.ok(after!.authTime > before!.authTime, 'authenticated anew');
    t.equal(after!.assurance, 'email', 'at most what the upstream proved: never sensitive');
    t.ok(after!.amr.includes('fed'));
    t.equal((await sessionOf(jar))?.identityId, ada, 'the new cookie holds the session');
    t.equal((await receipts('federation.sign_in')).length, 2);
  });

  await t.test('an old auth_time, or another person, is refused and leaves the session as it was', async (t) => {
    const jar = await signedIn();
    const ada = (await sessionOf(jar))!.identityId;
    const [before] = await storage.sessions.listLive(ada, Date.now());

    const stale = await startStepUp(jar);
    jar.absorb(stale);
    upstream.tamperIdToken = (claims) => upstream.sign({ ...claims, auth_time: Math.floor(Date.now() / 1000) - 3600 });
    t.teardown(() => (upstream.tamperIdToken = undefined));
    let back = await upstream.browser().signIn(stale.headers.get('location')!, 'ada@acme.example');
    let landed = await fetch(back, { headers: { cookie: jar.header(), accept: 'text/html' } });
    t.equal(landed.status, 400);
    t.match(await landed.text(), /data-reason="upstream_response_invalid"/);
    upstream.tamperIdToken = undefined;

    const other = await startStepUp(jar);
    back = await upstream.browser().signIn(other.headers.get('location')!, 'bea@acme.example');
    landed = await fetch(back, { headers: { cookie: jar.header(), accept: 'text/html' } });
    t.equal(landed.status, 400);
    t.match(await landed.text(), /data-reason="upstream_response_invalid"/, 'another person signed in upstream');
    const [after] = await storage.sessions.listLive(ada, Date.now());
    t.same(after, before, 'the session is untouched');
    t.match((await receipts('federation.refused')).at(-1), { receipt: { reason: 'upstream_response_invalid' } });
  });

  await t.test('another site cannot start it; an account with a passkey steps up with it', async (t) => {
    const jar = await signedIn();
    const forged = await startStepUp(jar, 'https://evil.example');
    t.equal(forged.status, 403);
    t.match(await forged.text(), /data-reason="origin_mismatch"/);
    const ada = (await sessionOf(jar))!.identityId;
    await storage.credentials.insert({
      credId: 'cred-ada',
      identityId: ada,
      publicKey: new Uint8Array([1]),
      counter: 0,
      transports: [],
      backupEligible: false,
      backedUp: false,
      label: 'Passkey',
      createdAt: Date.now(),
      lastUsedAt: null,
    });
    const refused = await startStepUp(jar);
    t.equal(refused.status, 403);
    const page = await (await fetch(`${base}/auth/step-up`, { headers: { cookie: jar.header() } })).text();
    t.match(page, /data-action="step-up"/, 'the passkey step-up');
  });
});
