import { createHash } from 'node:crypto';
import t from 'tap';
import { createGuardedFetcher } from '#lib/fetch/guarded-fetch.js';
import { manualClock } from '../../helpers/build.js';
import { enrollAgent, recordEvents } from '../../helpers/agents.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['agents'] as const;

const CARD = JSON.stringify({
  name: 'Build bot',
  description: 'Builds things',
  version: '1.0',
  supportedInterfaces: [],
  capabilities: {},
  defaultInputModes: ['application/json'],
  defaultOutputModes: ['application/json'],
  skills: [{ id: 'build', name: 'Build' }, { id: 'test', name: 'Test' }, { id: 'build' }, { name: 'no id' }],
});
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

t.test(
  'A2A card discovery over https with a test CA appends descriptor-integrity evidence that ages out',
  async (t) => {
    const tls = makeTestCa(t);
    const cards = await startHttpsServer(t, tls, (req, res) => {
      if (req.url === '/.well-known/agent-card.json') {
        res.setHeader('content-type', 'application/json');
        res.end(CARD);
      } else if (req.url === '/moved') {
        res.statusCode = 302;
        res.setHeader('location', '/.well-known/agent-card.json');
        res.end();
      } else if (req.url === '/big') {
        res.end(JSON.stringify({ name: 'big', pad: 'x'.repeat(140_000) }));
      } else if (req.url === '/big-chunked') {
        // No content-length: the cap must hold on the bytes as they arrive.
        res.write('{"name":"big","pad":"');
        for (let i = 0; i < 20; i++) res.write('y'.repeat(8192));
        res.end('"}');
      } else if (req.url === '/slow') {
        res.setHeader('content-type', 'application/json');
        res.write('{"name": "sl');
      } else if (req.url === '/html') {
        res.setHeader('content-type', 'text/html');
        res.end('<!doctype html><p>not a card</p>');
      } else if (req.url === '/array') {
        res.end('[1,2]');
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
    const clock = manualClock(Date.now());
    const { app, signIn, services } = await buildSignedIn(t, {
      areas,
      now: clock.now,
      config: { 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile },
    });
    const { browser } = await signIn({ username: 'alice' });
    const agent = await enrollAgent(app, browser);
    const discover = (url: string) => browser.post('/auth/agents/proof/a2a-discover', { agent_id: agent.agentId, url });

    const events = recordEvents(services);
    const refusals: Array<[string, string]> = [
      [`http://localhost:${cards.port}/.well-known/agent-card.json`, 'fetch_not_https'],
      [`https://user:pw@localhost:${cards.port}/.well-known/agent-card.json`, 'fetch_credentials_in_url'],
      [`${cards.origin}/big`, 'fetch_too_large'],
      [`${cards.origin}/big-chunked`, 'fetch_too_large'],
      [`${cards.origin}/html`, 'agent_card_invalid'],
      [`${cards.origin}/array`, 'agent_card_invalid'],
      [`${cards.origin}/missing`, 'fetch_failed'],
      [`${cards.origin}/slow`, 'fetch_timeout'],
    ];
    for (const [url, reason] of refusals) {
      const res = await discover(url);
      t.equal(res.json().reason, reason, `${url}: ${res.body}`);
      t.equal(res.json().ok, false);
    }
    t.same(events, [], 'no refusal appended anything');
    t.same(await services.storage.agents.listEvidence(agent.agentId), []);
    t.equal(
      (await app.inject({ method: 'GET', url: `/agent/${agent.proofId}.json` })).json().claims.descriptor_integrity
        .status,
      'declared',
    );

    const ok = await discover(`${cards.origin}/moved`);
    t.equal(ok.statusCode, 200, ok.body);
    const url = `${cards.origin}/moved`;
    t.match(ok.json().evidence, {
      type: 'descriptor-integrity',
      url,
      sha256: sha(CARD),
      fetched_at: new Date(clock.now()).toISOString(),
    });
    t.same(ok.json().declared, { a2aCardUrl: url, capabilities: ['build', 'test'] });
    t.match(events, [{ type: 'agent.evidence_added', evidence: 'descriptor-integrity', subject: url }]);

    const vector = (await app.inject({ method: 'GET', url: `/agent/${agent.proofId}.json` })).json();
    t.equal(vector.claims.descriptor_integrity.status, 'verified');
    t.match(vector.evidence, [{ type: 'descriptor-integrity', url, sha256: sha(CARD) }]);
    t.same(
      vector.a2a.skills.map((s: { id: string }) => s.id),
      ['build', 'test'],
    );
    t.match(vector.a2a.supportedInterfaces, [{ url }]);

    // A second discovery adds evidence but never overwrites what is declared.
    const again = await discover(`${cards.origin}/.well-known/agent-card.json`);
    t.equal(again.statusCode, 200);
    t.same(again.json().declared, { a2aCardUrl: url, capabilities: ['build', 'test'] });
    t.equal((await services.storage.agents.listEvidence(agent.agentId)).length, 2);

    const expiresAt = Date.parse(again.json().evidence.expires_at);
    t.equal(expiresAt - clock.now(), 7 * 86_400_000, 'fresh for 7 days');
    clock.advance(expiresAt - clock.now() - 1);
    t.equal(
      (await app.inject({ method: 'GET', url: `/agent/${agent.proofId}.json` })).json().claims.descriptor_integrity
        .status,
      'verified',
      'fresh until expires_at',
    );
    clock.advance(1);
    const aged = (await app.inject({ method: 'GET', url: `/agent/${agent.proofId}.json` })).json();
    t.same(aged.claims.descriptor_integrity, {
      status: 'expired',
      verified_at: again.json().evidence.fetched_at,
      expires_at: again.json().evidence.expires_at,
    });
  },
);

t.test('private targets are refused by default, before anything is sent', async (t) => {
  const tls = makeTestCa(t);
  const cards = await startHttpsServer(t, tls, (_req, res) => res.end(CARD));
  const { app, signIn, services } = await buildSignedIn(t, { areas, config: { 'fetch.caFile': tls.caFile } });
  t.equal(services.config.fetch.allowPrivateTargets, false, 'off by default');
  const { browser } = await signIn({ username: 'alice' });
  const agent = await enrollAgent(app, browser);
  const events = recordEvents(services);
  for (const url of [
    `${cards.origin}/card.json`,
    `https://127.0.0.1:${cards.port}/card.json`,
    `https://[::1]:${cards.port}/card.json`,
    'https://10.1.2.3/card.json',
    'https://169.254.169.254/latest/meta-data/',
    `https://[::ffff:127.0.0.1]:${cards.port}/card.json`,
  ]) {
    const res = await browser.post('/auth/agents/proof/a2a-discover', { agent_id: agent.agentId, url });
    t.equal(res.statusCode, 400, url);
    t.equal(res.json().reason, 'fetch_private_address', `${url}: ${res.body}`);
  }
  t.same(cards.requests, [], 'the card server saw nothing');
  t.same(events, []);
  const other = await signIn({ username: 'bob' });
  const foreign = await other.browser.post('/auth/agents/proof/a2a-discover', {
    agent_id: agent.agentId,
    url: 'https://cards.example.com/card.json',
  });
  t.equal(foreign.json().reason, 'not_found', "another owner's agent");
});

t.test(
  'a redirect to a private address is refused on the hop, even when the first address was let through',
  async (t) => {
    const tls = makeTestCa(t);
    let target = '';
    const cards = await startHttpsServer(t, tls, (req, res) => {
      if (req.url === '/card.json') return void res.end(CARD);
      res.statusCode = 302;
      res.setHeader('location', target);
      res.end();
    });
    const { app, signIn, services } = await buildSignedIn(t, { areas, config: { 'fetch.caFile': tls.caFile } });
    // Only the card server's own address is let through, as an operator's allow-list would.
    services.fetcher = createGuardedFetcher({ caFile: tls.caFile, allowAddresses: ['127.0.0.1'] });
    const { browser } = await signIn({ username: 'alice' });
    const agent = await enrollAgent(app, browser);
    const discover = (url: string) => browser.post('/auth/agents/proof/a2a-discover', { agent_id: agent.agentId, url });
    t.equal(
      (await discover(`https://127.0.0.1:${cards.port}/card.json`)).statusCode,
      200,
      'the allowed address itself',
    );
    const events = recordEvents(services);
    for (const to of [
      `https://[::1]:${cards.port}/card.json`,
      'https://10.0.0.7/card.json',
      'https://169.254.169.254/latest/meta-data/',
      `http://127.0.0.1:${cards.port}/card.json`,
    ]) {
      target = to;
      const res = await discover(`https://127.0.0.1:${cards.port}/redirect`);
      t.equal(
        res.json().reason,
        to.startsWith('http:') ? 'fetch_not_https' : 'fetch_private_address',
        `${to}: ${res.body}`,
      );
    }
    t.same(events, []);
    t.equal((await services.storage.agents.listEvidence(agent.agentId)).length, 1);
  },
);
