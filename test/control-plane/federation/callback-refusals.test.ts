import t, { type Test } from 'tap';
import { generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { createConnection } from '../../../control-plane/src/federation/connections.js';
import { seedAcmeOwner, seedProvedMailDomain } from '../../helpers/mail-domains.js';
import { ADMIN, start } from '../../helpers/openid-client.js';
import { startAtKeyplane, startUpstreamOidc } from '../../helpers/upstream-oidc.js';

/**
 * The checks of a connection's callback, end to end against node-oidc-provider over HTTP
 * (docs/federation.md#refusals): an ID token with a bad signature, another audience or issuer, or
 * expired (node-oidc-provider cannot send those, so its token response is rewritten with tokens
 * signed by jose), a replayed or missing state, the upstream's error=, and a token of another
 * tenant under a `tid` or `hd` pin. Each ends on the refusal page naming the reason, with a
 * `federation.refused` receipt. Chromium drives the same page in test/interop/browser/federation-oidc.test.ts.
 */
const SECRET = 'upstream-client-secret-0123456789';
const TENANT = '0f0e0d0c-0b0a-4908-8706-050403020100';
const OTHER_TENANT = '11111111-2222-4333-8444-555555555555';

t.test('callback refusals', async (t) => {
  const upstream = await startUpstreamOidc(t);
  const server = await start(t, { fetch: { allowPrivateTargets: true, caFile: upstream.tls.caFile } });
  const base = server.url;
  const { storage } = server.services;
  const now = Date.now();
  await seedAcmeOwner(storage, now, { org: false });
  const owner = { type: 'person' as const, id: 'usr_owner' };
  const orgWith = async (slug: string, domain: string, tenant?: { tid?: string; hd?: string }) => {
    const orgId = `org_${slug}`;
    await storage.orgs.create({ orgId, slug, name: slug, website: null, createdAt: now }, 'usr_owner');
    await seedProvedMailDomain(storage, orgId, domain, now);
    const { connection } = await createConnection(
      server.services,
      { orgId, actor: owner },
      {
        type: 'oidc',
        name: `${slug} SSO`,
        oidc: { issuer: upstream.issuer, client_id: slug, client_secret: SECRET, ...(tenant ? { tenant } : {}) },
        domains: [domain],
        jit: { role: 'member' },
      },
    );
    upstream.addClient({
      client_id: slug,
      client_secret: SECRET,
      redirect_uris: [`${base}/federation/${connection.connectionId}/callback`],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    return connection.connectionId;
  };
  const acme = await orgWith('acme', 'acme.example');
  const entra = await orgWith('entra', 'entra.example', { tid: TENANT });
  const google = await orgWith('google', 'google.example', { hd: 'google.example' });

  const refusals = async () =>
    (
      (await (
        await fetch(`${base}/admin/receipts?type=federation.refused`, { headers: { authorization: `Bearer ${ADMIN}` } })
      ).json()) as { receipts: Array<{ receipt: Record<string, unknown> }> }
    ).receipts;
  /** Opens `url` as the browser with `cookie`; the page must name `reason`, and a receipt say so. */
  const refusedWith = async (t: Test, url: string, cookie: string, reason: string, connectionId = acme) => {
    const before = (await refusals()).length;
    const res = await fetch(url, { redirect: 'manual', headers: { cookie, accept: 'text/html' } });
    t.equal(res.status >= 400 && res.status < 500, true, `a refusal page (${res.status})`);
    t.match(res.headers.get('content-type'), /text\/html/);
    t.match(await res.text(), new RegExp(`data-reason="${reason}"`), `the page names ${reason}`);
    const receipts = await refusals();
    t.equal(receipts.length, before + 1, 'one federation.refused receipt');
    t.match(receipts.at(-1)!.receipt, { reason, connectionId, actor: { type: 'connection', id: connectionId } });
  };
  /** Signs in at the upstream as `login`; the callback URL and the browser's cookie at Keyplane. */
  const upTo = async (login: string) => {
    const { cookie, authorizationUrl } = await startAtKeyplane(base, login);
    return { cookie, callback: await upstream.browser().signIn(authorizationUrl, login) };
  };

  const foreign = await generateKeyPair('RS256');
  const tampered: Array<[string, (claims: JWTPayload) => Promise<string>]> = [
    [
      'a bad signature',
      (claims) =>
        new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'upstream-test-key' }).sign(foreign.privateKey),
    ],
    ['another audience', (claims) => upstream.sign({ ...claims, aud: 'someone-else' })],
    ['another issuer', (claims) => upstream.sign({ ...claims, iss: 'https://idp.attacker.example' })],
    ['expired', (claims) => upstream.sign({ ...claims, iat: claims.iat! - 7200, exp: claims.iat! - 3600 })],
  ];
  for (const [what, replace] of tampered)
    await t.test(`an ID token with ${what} is refused`, async (t) => {
      upstream.tamperIdToken = replace;
      t.teardown(() => {
        upstream.tamperIdToken = undefined;
      });
      const { cookie, callback } = await upTo('ada@acme.example');
      await refusedWith(t, callback, cookie, 'upstream_response_invalid');
    });

  await t.test('a replayed state and a missing one are refused', async (t) => {
    const { cookie, callback } = await upTo('ada@acme.example');
    const first = await fetch(callback, { redirect: 'manual', headers: { cookie } });
    t.equal(first.status, 303, 'the first use signs in');
    await refusedWith(t, callback, cookie, 'federation_state_unknown');
    const missing = new URL(callback);
    missing.searchParams.delete('state');
    await refusedWith(t, missing.href, cookie, 'federation_state_unknown');
  });

  await t.test("the upstream's error= is refused, naming it", async (t) => {
    const { cookie, authorizationUrl } = await startAtKeyplane(base, 'ada@acme.example');
    const state = new URL(authorizationUrl).searchParams.get('state')!;
    const answer = new URL(`${base}/federation/${acme}/callback`);
    answer.search = new URLSearchParams({ error: 'access_denied', state, iss: upstream.issuer }).toString();
    await refusedWith(t, answer.href, cookie, 'upstream_error');
  });

  await t.test('a pinned Entra-shaped tenant (tid) refuses an ID token of another tenant', async (t) => {
    upstream.extraClaims.set('eve@entra.example', { tid: OTHER_TENANT });
    upstream.extraClaims.set('ed@entra.example', { tid: TENANT });
    const other = await upTo('eve@entra.example');
    await refusedWith(t, other.callback, other.cookie, 'upstream_response_invalid', entra);
    const own = await upTo('ed@entra.example');
    t.equal((await fetch(own.callback, { redirect: 'manual', headers: { cookie: own.cookie } })).status, 303);
  });

  await t.test('a pinned Google-shaped domain (hd) refuses an ID token of another domain', async (t) => {
    upstream.extraClaims.set('gil@google.example', { hd: 'elsewhere.example' });
    upstream.extraClaims.set('gus@google.example', { hd: 'google.example' });
    const other = await upTo('gil@google.example');
    await refusedWith(t, other.callback, other.cookie, 'upstream_response_invalid', google);
    t.match(new URL(other.callback).origin, base);
    const own = await upTo('gus@google.example');
    t.equal((await fetch(own.callback, { redirect: 'manual', headers: { cookie: own.cookie } })).status, 303);
  });
});
