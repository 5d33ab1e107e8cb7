import t from 'tap';
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';
import {
  ADMIN,
  CALLBACK,
  RESOURCE,
  browse,
  passkeySignUp,
  refusal,
  register,
  start,
  type CookieJar,
} from '../../helpers/openid-client.js';

/**
 * Access rules answer at every token, not only at sign-in (docs/security.md#access-rules-on-every-path),
 * with openid-client as the relying party: a client restricted to an org's members keeps
 * refreshing and exchanging for a member; once the member is removed, the grants the rules no
 * longer admit are revoked (introspection `active: false`, a back-channel logout queued), and a
 * client whose rules are edited to leave the person out is refused at refresh and exchange
 * (`invalid_grant`) even while the grant stands.
 */
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';

async function postJson(base: string, jar: CookieJar, path: string, body: unknown): Promise<Record<string, any>> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { cookie: jar.header(), origin: base, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<Record<string, any>>;
}

async function identityOf(base: string, jar: CookieJar): Promise<string> {
  const res = await fetch(`${base}/account?format=json`, {
    headers: { cookie: jar.header(), accept: 'application/json' },
  });
  return ((await res.json()) as { identityId: string }).identityId;
}

async function receipts(base: string, kind: string): Promise<number> {
  const metrics = await (await fetch(`${base}/metrics`)).text();
  const line = metrics.split('\n').find((l) => l.startsWith(`keyplane_receipts_total{kind="${kind}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function setup(t: Parameters<typeof start>[0]) {
  // The relying party's back-channel logout endpoint: a real https server the control plane posts to.
  const tls = makeTestCa(t);
  const logoutTokens: string[] = [];
  let heard: (() => void) | undefined;
  const rp = await startHttpsServer(t, tls, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      res.statusCode = 200;
      res.end();
      logoutTokens.push(new URLSearchParams(body).get('logout_token') ?? '');
      heard?.();
    });
  });
  const logoutToken = () =>
    logoutTokens.length > 0
      ? Promise.resolve(logoutTokens[0]!)
      : new Promise<string>((resolve, reject) => {
          heard = () => resolve(logoutTokens[0]!);
          setTimeout(() => reject(new Error('no logout token within 20 s')), 20_000).unref();
        });
  const server = await start(t, { 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile });
  const base = server.url;
  const owner = await passkeySignUp(base, 'acme-owner');
  const bob = await passkeySignUp(base, 'bob');
  await postJson(base, owner, '/auth/orgs/create', { name: 'Acme' });
  await postJson(base, owner, '/org/acme/members/invite', { username: 'bob', role: 'member' });
  await postJson(base, bob, '/org/acme/members/accept', {});
  const registered = await register(base, {
    client_name: 'Acme wiki',
    grant_types: ['authorization_code', 'refresh_token', EXCHANGE],
    scope: 'openid profile offline_access',
    access: { orgs: [{ slug: 'acme' }] },
    backchannel_logout_uri: `${rp.origin}/backchannel-logout`,
  });
  const config = await client.discovery(
    new URL(base),
    registered.client_id,
    registered.client_secret,
    client.ClientSecretBasic(registered.client_secret as string),
    { execute: [client.allowInsecureRequests] },
  );
  const signIn = async () => {
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope: 'openid profile offline_access',
      prompt: 'consent',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: 's',
    });
    return client.authorizationCodeGrant(config, await browse(url, bob, base), {
      pkceCodeVerifier: verifier,
      expectedState: 's',
    });
  };
  const exchange = (token: string) =>
    client.genericGrantRequest(config, EXCHANGE, {
      subject_token: token,
      subject_token_type: ACCESS_TOKEN,
      resource: RESOURCE,
    });
  return { base, owner, bob, registered, config, signIn, exchange, logoutToken };
}

t.test(
  'a member removed from the org: grants revoked, back-channel logout queued, refresh and exchange refused',
  async (t) => {
    const { base, owner, bob, registered, config, signIn, exchange, logoutToken } = await setup(t);
    const tokens = await signIn();
    t.ok(tokens.refresh_token, 'a refresh token for the member');
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    t.ok((await exchange(refreshed.access_token)).access_token, 'a member may exchange');
    const deniedBefore = await receipts(base, 'signin.access_denied');
    const queuedBefore = await receipts(base, 'logout.backchannel_queued');

    await postJson(base, owner, '/org/acme/members/remove', { user: await identityOf(base, bob) });

    t.match(
      await client.tokenIntrospection(config, refreshed.access_token),
      { active: false },
      'the grant the rules no longer admit is revoked',
    );
    t.equal(await refusal(client.refreshTokenGrant(config, refreshed.refresh_token!)), 'invalid_grant');
    t.equal(await refusal(exchange(refreshed.access_token)), 'invalid_grant');
    t.equal(await receipts(base, 'logout.backchannel_queued'), queuedBefore + 1, 'one back-channel logout queued');
    t.match(
      decodeJwt(await logoutToken()),
      { aud: registered.client_id, sub: tokens.claims()!.sub, sid: tokens.claims()!.sid },
      'and delivered to the client for the sign-in its grant came from',
    );
    t.ok((await receipts(base, 'token.family_revoked')) >= 1, 'the revocation is receipted');
    t.equal(
      await receipts(base, 'signin.access_denied'),
      deniedBefore,
      'a revoked grant is refused before any rule is read',
    );
  },
);

t.test('rules edited to leave the person out: refresh and exchange answer invalid_grant', async (t) => {
  const { base, registered, config, signIn, exchange } = await setup(t);
  const tokens = await signIn();
  const read = await fetch(`${base}/register/${registered.client_id}`, {
    headers: { authorization: `Bearer ${registered.registration_access_token}` },
  });
  const current = (await read.json()) as Record<string, any>;
  const put = await fetch(`${base}/register/${registered.client_id}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${registered.registration_access_token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_id: registered.client_id,
      revision: current.revision,
      client_name: current.client_name,
      redirect_uris: current.redirect_uris,
      grant_types: current.grant_types,
      scope: current.scope,
      resources: current.resources,
      token_endpoint_auth_method: current.token_endpoint_auth_method,
      access: { orgs: [{ slug: 'acme', roles: ['owner'] }] },
    }),
  });
  t.equal(put.status, 200, await put.clone().text());
  const denied = await receipts(base, 'signin.access_denied');
  t.equal(await refusal(client.refreshTokenGrant(config, tokens.refresh_token!)), 'invalid_grant', 'at refresh');
  t.equal(await refusal(exchange(tokens.access_token)), 'invalid_grant', 'at token exchange');
  t.equal(await receipts(base, 'signin.access_denied'), denied + 2, 'each refusal receipted');
});

t.test('the operator token may still register rules naming any org', async (t) => {
  const { base } = await setup(t);
  const res = await fetch(`${base}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [CALLBACK], access: { orgs: [{ slug: 'someone-else' }] } }),
  });
  t.equal(res.status, 201);
});
