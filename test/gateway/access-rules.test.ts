import t from 'tap';
import { decodeJwt } from 'jose';
import { request } from 'undici';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import { get, HTML, passkeyUser, signIn, world, type Jar, type World } from './real-world.js';

const POLICY: GatewayPolicy = {
  mode: 'enforce',
  routes: [
    { path: '/', min_assurance: 'passkey', allow: { orgs: [{ slug: 'acme' }] } },
    { path: '/ops', allow: { orgs: [{ slug: 'acme', roles: ['admin', 'owner'] }] } },
    { path: '/open' },
  ],
};

async function post(base: string, jar: Jar, path: string, body: unknown) {
  const res = await request(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base, cookie: jar.header(), accept: 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.body.json()) as Record<string, unknown>;
  if (res.statusCode !== 200 && res.statusCode !== 201)
    throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(json)}`);
  return json;
}

/** Waits (with a deadline) until the gateway holds a config for which `holds` is true. */
async function untilConfig(w: World, holds: (version: number) => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!holds(w.gw.running.gateway.configHolder.current!.version)) {
    if (Date.now() > deadline) throw new Error('the gateway never received the new config');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The world's owner creates org `acme`; `member` joins it as a member. Returns the member's identity id. */
async function acmeWithMember(w: World, member: Awaited<ReturnType<typeof passkeyUser>>, username: string) {
  await post(w.cp.url, w.user.jar, '/auth/orgs/create', { name: 'Acme' });
  await post(w.cp.url, w.user.jar, '/org/acme/members/invite', { username, role: 'member' });
  await post(w.cp.url, member.jar, '/org/acme/members/accept', {});
}

t.test('members of the org pass; a stranger gets 403: a page for browsers, the envelope for API callers', async (t) => {
  const w = await world(t, POLICY, {
    pull: true,
    register: () => ({ scope: 'openid email profile orgs offline_access' }),
  });
  const memberName = `member-${Date.now() % 100000}`;
  const member = await passkeyUser(w.cp.url, memberName);
  const stranger = await passkeyUser(w.cp.url, `stranger-${Date.now() % 100000}`);
  const before = w.gw.running.gateway.configHolder.current!.version;
  await acmeWithMember(w, member, memberName);
  // The memberships reach the gateway in the signed config, not by a call per request.
  await untilConfig(w, (version) => version > before);
  const directory = w.gw.running.gateway.configHolder.current!.directory!;
  t.match(directory.identities[member.identityId], { username: memberName, orgs: [{ slug: 'acme', role: 'member' }] });

  const asMember = await signIn({ ...w, user: member }, '/app');
  t.equal(asMember.landed.status, 302);
  const allowed = await get(`${w.gw.url}/app`, { ...HTML, cookie: asMember.jar.header() });
  t.equal(allowed.status, 200, 'a member passes');
  // Scope orgs: the app learns the memberships without calling back, in a header and signed.
  const seen = w.upstream.last().headers;
  t.equal(seen['x-auth-orgs'], 'acme:member');
  t.same(decodeJwt(seen['x-auth-assertion'] as string).orgs, [{ slug: 'acme', role: 'member' }]);
  const ops = await get(`${w.gw.url}/ops/x`, { accept: 'application/json', cookie: asMember.jar.header() });
  t.equal(ops.status, 403, 'a member is not an admin');
  t.match(JSON.parse(ops.body), { ok: false, reason: 'access_denied' });
  const owner = await signIn(w, '/ops/x');
  t.equal((await get(`${w.gw.url}/ops/x`, { cookie: owner.jar.header() })).status, 200, 'the owner passes /ops');

  const asStranger = await signIn({ ...w, user: stranger }, '/app');
  const page = await get(`${w.gw.url}/app`, { ...HTML, cookie: asStranger.jar.header() });
  t.equal(page.status, 403, 'signed in strongly enough, but no rule admits the stranger');
  t.equal(page.location, undefined, 'never a redirect back to sign-in');
  t.match(page.headers['content-type'], /text\/html/);
  t.match(page.body, /data-field="account">stranger-/);
  t.match(page.body, new RegExp(`data-field="app">localhost:${new URL(w.gw.url).port}<`));
  const another = /href="([^"]+)" data-action="use-another-account"/.exec(page.body)?.[1]?.replace(/&amp;/g, '&');
  t.ok(another, 'the page offers another account');
  const switched = await get(`${w.gw.url}${another}`, { cookie: asStranger.jar.header() });
  t.equal(switched.status, 302);
  const authorize = new URL(switched.location!);
  t.equal(authorize.searchParams.get('prompt'), 'select_account', 'the control plane asks which account');
  t.equal(authorize.searchParams.get('client_id'), w.client.client_id);

  const api = await get(`${w.gw.url}/app`, { accept: 'application/json', cookie: asStranger.jar.header() });
  t.equal(api.status, 403);
  t.same(JSON.parse(api.body).reason, 'access_denied');
  t.equal((await get(`${w.gw.url}/open`, { cookie: asStranger.jar.header() })).status, 200, 'a route without allow');

  // Forward auth answers the same.
  const forward = await get(`${w.gw.url}/_gate/auth`, { accept: 'application/json', cookie: asStranger.jar.header() });
  t.equal(forward.status, 403);
  t.equal(JSON.parse(forward.body).reason, 'access_denied');
  t.equal((await get(`${w.gw.url}/_gate/auth`, { cookie: asMember.jar.header() })).status, 200);

  // Evidence counts the refusals by reason.
  const metrics = await get(`${w.gw.url}/metrics`);
  t.match(metrics.body, /kp_gate_refusals_total\{reason="access_denied"\} [1-9]/);
  t.equal(
    w.upstream.seen.filter((seen) => seen.headers['x-auth-subject'] === stranger.identityId && seen.url !== '/open')
      .length,
    0,
    'nothing of the stranger reached the app but the open route',
  );
});

t.test(
  'allow.groups admits members of the team, with X-Auth-Groups upstream; the rest of the org gets 403',
  async (t) => {
    const w = await world(
      t,
      { mode: 'enforce', routes: [{ path: '/', min_assurance: 'passkey', allow: { groups: ['acme/eng'] } }] },
      { pull: true, register: () => ({ scope: 'openid email profile orgs groups offline_access' }) },
    );
    const inName = `engineer-${Date.now() % 100000}`;
    const outName = `outsider-${Date.now() % 100000}`;
    const engineer = await passkeyUser(w.cp.url, inName);
    const outsider = await passkeyUser(w.cp.url, outName);
    await acmeWithMember(w, engineer, inName);
    await post(w.cp.url, w.user.jar, '/org/acme/members/invite', { username: outName, role: 'member' });
    await post(w.cp.url, outsider.jar, '/org/acme/members/accept', {});
    const before = w.gw.running.gateway.configHolder.current!.version;
    await post(w.cp.url, w.user.jar, '/org/acme/teams', { name: 'eng', displayName: 'Engineering' });
    const put = await request(`${w.cp.url}/org/acme/teams/eng/members/${engineer.identityId}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', origin: w.cp.url, cookie: w.user.jar.header() },
      body: '{}',
    });
    t.equal(put.statusCode, 200);
    await put.body.dump();
    await untilConfig(w, (version) => version > before);
    t.match(w.gw.running.gateway.configHolder.current!.directory!.identities[engineer.identityId], {
      orgs: [{ slug: 'acme', role: 'member', teams: ['eng'] }],
    });

    const asEngineer = await signIn({ ...w, user: engineer }, '/app');
    t.equal((await get(`${w.gw.url}/app`, { ...HTML, cookie: asEngineer.jar.header() })).status, 200);
    const seen = w.upstream.last().headers;
    t.equal(seen['x-auth-groups'], 'acme/eng');
    t.same(decodeJwt(seen['x-auth-assertion'] as string).groups, ['acme/eng']);
    // The gateway asks consent (not first-party): the control plane refuses the outsider before it
    // (docs/gateway.md#access-rules), the callback marks the browser refused and goes back to the app.
    const asOutsider = await signIn({ ...w, user: outsider }, '/app');
    t.equal(asOutsider.callback.searchParams.get('error'), 'access_denied', 'a member of the org outside the team');
    t.equal(asOutsider.landed.location, `${w.gw.url}/app`);
    const refused = await get(`${w.gw.url}/app`, { ...HTML, cookie: asOutsider.jar.header() });
    t.equal(refused.status, 403, 'the 403 page, not another sign-in');
    t.match(refused.body, /No access to/);
  },
);

t.test('a member removed while signed in is refused after the next config refresh', async (t) => {
  const w = await world(t, POLICY, { pull: true });
  const memberName = `leaver-${Date.now() % 100000}`;
  const member = await passkeyUser(w.cp.url, memberName);
  const before = w.gw.running.gateway.configHolder.current!.version;
  await acmeWithMember(w, member, memberName);
  await untilConfig(w, (version) => version > before);
  const { jar } = await signIn({ ...w, user: member }, '/app');
  t.equal((await get(`${w.gw.url}/app`, { cookie: jar.header() })).status, 200);

  const joined = w.gw.running.gateway.configHolder.current!.version;
  await post(w.cp.url, w.user.jar, '/org/acme/members/remove', { user: member.identityId });
  await untilConfig(w, (version) => version > joined);
  const refreshesBefore = w.refreshes.count;
  const refused = await get(`${w.gw.url}/app`, { accept: 'application/json', cookie: jar.header() });
  t.equal(refused.status, 403, 'the session goes on, but it no longer admits the removed member');
  t.equal(JSON.parse(refused.body).reason, 'access_denied');
  t.equal(w.refreshes.count, refreshesBefore, 'no refresh was needed to find out');
});
