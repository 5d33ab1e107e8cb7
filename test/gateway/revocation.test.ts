import t from 'tap';
import { request } from 'undici';
import type { GatewayPolicy } from '../../lib/gateway/policy.js';
import { get, HTML, sessionIn, signIn, world } from './real-world.js';

const POLICY: GatewayPolicy = { mode: 'enforce', routes: [{ path: '/', min_assurance: 'passkey' }] };

t.test('a session revoked at the control plane ends at the gateway with the next config, before any refresh', async (t) => {
  const w = await world(t, POLICY, { pull: true });
  const { jar } = await signIn(w);
  const session = await sessionIn(w, jar);
  t.type(session.idpSid, 'string', 'the gateway session remembers the control plane\'s sid');
  t.equal((await get(`${w.gw.url}/app`, { cookie: jar.header() })).status, 200);
  const versionBefore = w.gw.running.gateway.configHolder.current!.version;

  const account = await (await request(`${w.cp.url}/account?format=json`, { headers: { cookie: w.user.jar.header(), accept: 'application/json' } })).body.json() as { sessions: Array<{ identifier: string; current: boolean }> };
  const current = account.sessions.find((entry) => entry.current)!;
  t.equal(current.identifier, session.idpSid);
  const revoked = await request(`${w.cp.url}/auth/sessions/revoke`, {
    method: 'POST', headers: { cookie: w.user.jar.header(), origin: w.cp.url, 'content-type': 'application/json' }, body: JSON.stringify({ identifier: current.identifier }),
  });
  t.equal(revoked.statusCode, 200, await revoked.body.text());

  // The config pull (every 2 s) brings a new version naming the revoked session.
  while (!w.gw.running.gateway.configHolder.current!.revokedSessions.has(session.idpSid!)) await new Promise((resolve) => setTimeout(resolve, 100));
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
});
