import t from 'tap';
import { agentKey, enrollAgent } from '../../helpers/agents.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['agents'] as const;

t.test("the fleet page lists the owner's agents and has the owner-code field", async (t) => {
  const { app, signIn } = await buildSignedIn(t, { areas });
  const { browser } = await signIn({ username: 'alice' });
  const agent = await enrollAgent(app, browser, { name: 'Deploy <bot>' });
  const key = await agentKey();
  const pending = (
    await app.inject({
      method: 'POST',
      url: '/auth/agents/proof/enroll/begin',
      payload: { name: 'Waiting bot', subjectKind: 'robot', publicJwk: key.jwk },
    })
  ).json();
  await browser.post('/auth/agents/proof/enroll/approve', {
    enrollment_id: pending.enrollment_id,
    owner_code: pending.owner_code,
  });
  const res = await browser.get(`/account/agents?enrollment=${pending.enrollment_id}`, { accept: 'text/html' });
  t.equal(res.statusCode, 200);
  t.match(res.body, /name="owner_code"/);
  t.match(res.body, new RegExp(`value="${pending.enrollment_id}"`));
  t.match(res.body, /Deploy &lt;bot&gt;/, 'names are escaped');
  t.match(res.body, /data-state="active"/);
  t.match(res.body, /Waiting bot/);
  t.notMatch(res.body, /<script>(?!\s*$)/, 'no inline script');
  t.match(res.headers['content-security-policy'], /script-src/);
  const profile = await browser.get(`/account/agents/${agent.agentId}`, { accept: 'text/html' });
  t.equal(profile.statusCode, 200);
  t.match(profile.body, /data-agent-action="suspend"/);
  const anonymous = await app.inject({ method: 'GET', url: '/account/agents', headers: { accept: 'text/html' } });
  t.equal(anonymous.statusCode, 303);
});

t.test('unknown and foreign agent profiles are the same 404', async (t) => {
  const { app, signIn } = await buildSignedIn(t, { areas });
  const { browser: alice } = await signIn({ username: 'alice' });
  const { browser: mallory } = await signIn({ username: 'mallory' });
  const agent = await enrollAgent(app, alice);
  const foreign = await mallory.get(`/account/agents/${agent.agentId}`, { accept: 'text/html' });
  const unknown = await mallory.get('/account/agents/agt_nothing', { accept: 'text/html' });
  t.same([foreign.statusCode, unknown.statusCode], [404, 404]);
  // The same refusal page (docs/errors.md#one-error-path), but for each page's own CSP nonce.
  const unnonced = (body: string) =>
    body.replace(/nonce="[^"]*"/g, 'nonce=""').replaceAll(agent.agentId, 'agt_nothing');
  t.match(unknown.body, '<code data-reason="not_found">');
  t.equal(unnonced(foreign.body), unnonced(unknown.body));
  const json = { accept: 'application/json' };
  t.equal(
    (await mallory.get(`/account/agents/${agent.agentId}`, json)).body,
    (await mallory.get('/account/agents/agt_nothing', json)).body,
  );
});
