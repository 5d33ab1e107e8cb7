import t from 'tap';
import { request } from 'undici';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import { createTokenClient } from '../../gateway/src/token-client.js';
import { get, HTML, sessionIn, signIn, signOut, world } from './real-world.js';

const POLICY: GatewayPolicy = { mode: 'enforce', routes: [{ path: '/', min_assurance: 'passkey' }] };

t.test(
  'a session revoked at the control plane ends at the gateway with the next config, before any refresh',
  async (t) => {
    const w = await world(t, POLICY, { pull: true });
    const { jar } = await signIn(w);
    const session = await sessionIn(w, jar);
    t.type(session.idpSid, 'string', "the gateway session remembers the control plane's sid");
    t.equal((await get(`${w.gw.url}/app`, { cookie: jar.header() })).status, 200);
    const versionBefore = w.gw.running.gateway.configHolder.current!.version;

    const account = (await (
      await request(`${w.cp.url}/account?format=json`, {
        headers: { cookie: w.user.jar.header(), accept: 'application/json' },
      })
    ).body.json()) as { sessions: Array<{ identifier: string; current: boolean }> };
    const current = account.sessions.find((entry) => entry.current)!;
    t.equal(current.identifier, session.idpSid);
    const revoked = await request(`${w.cp.url}/auth/sessions/revoke`, {
      method: 'POST',
      headers: { cookie: w.user.jar.header(), origin: w.cp.url, 'content-type': 'application/json' },
      body: JSON.stringify({ identifier: current.identifier }),
    });
    t.equal(revoked.statusCode, 200, await revoked.body.text());

    // The config pull (every 2 s) brings a new version naming the revoked session.
    while (!w.gw.running.gateway.configHolder.current!.revokedSessions.has(session.idpSid!))
      await new Promise((resolve) => setTimeout(resolve, 100));
    t.ok(w.gw.running.gateway.configHolder.current!.version > versionBefore, 'a new config version');
    const refreshesBefore = w.refreshes.count;
    const api = await get(`${w.gw.url}/app`, { cookie: jar.header(), accept: 'application/json' });
    t.equal(api.status, 401, 'the session is over');
    t.match(JSON.parse(api.body), { reason: 'unauthorized' });
    const page = await get(`${w.gw.url}/app`, { ...HTML, cookie: jar.header() });
    t.equal(page.status, 302, 'a browser is sent to sign in again');
    t.ok(page.location?.startsWith(`${w.cp.url}/auth/authorize?`));
    t.equal(w.refreshes.count, refreshesBefore, 'no refresh was needed to find out');
    t.equal(w.upstream.seen.length, 1);
  },
);

t.test(
  "/_gate/signout revokes the session's refresh token at the control plane: a copied cookie cannot be refreshed",
  async (t) => {
    const w = await world(t, POLICY);
    const { jar } = await signIn(w);
    const copied = jar.header();
    const session = await sessionIn(w, jar);
    const out = await signOut(w, jar);
    t.equal(out.status, 302);
    const client = createTokenClient({
      controlPlane: w.cp.url,
      clientId: w.client.client_id,
      clientSecret: w.client.client_secret,
    });
    await t.rejects(
      client.refresh(session.refreshToken!),
      { name: 'TokenEndpointError', error: 'invalid_grant' },
      'the refresh token is revoked',
    );
    // The copy's access token is due: its refresh is refused and the session is over.
    w.clock.offset = 3_600_000;
    const later = await get(`${w.gw.url}/app`, { cookie: copied, accept: 'application/json' });
    t.equal(later.status, 401);
    t.equal(w.upstream.seen.length, 0);
  },
);
