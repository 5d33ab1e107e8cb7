import t from 'tap';
import { enrollAgent, recordEvents } from '../../helpers/agents.js';
import { startTxtServer } from '../../helpers/dns-server.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['agents'] as const;

t.test(
  'DNS TXT domain control through the configured resolver appends evidence; a record for another agent does not',
  async (t) => {
    const records = new Map<string, string[][]>();
    const { address } = await startTxtServer(t, records);
    const { app, signIn, services } = await buildSignedIn(t, { areas, config: { 'dns.resolvers': [address] } });
    const { browser } = await signIn({ username: 'alice' });
    const agent = await enrollAgent(app, browser);
    const other = await enrollAgent(app, browser, { name: 'Other bot' });
    const challenge = (
      await browser.post('/auth/agents/proof/dns-challenge', { agent_id: agent.agentId, domain: 'Agents.Example.test' })
    ).json();
    t.same({ name: challenge.name, type: challenge.type }, { name: '_svc-agent.agents.example.test', type: 'TXT' });
    t.match(challenge.value, /^svc-agent=[0-9a-f]{40}$/);
    t.equal(
      (
        await browser.post('/auth/agents/proof/dns-challenge', {
          agent_id: agent.agentId,
          domain: 'agents.example.test',
        })
      ).json().value,
      challenge.value,
      'stable',
    );
    const otherValue = (
      await browser.post('/auth/agents/proof/dns-challenge', { agent_id: other.agentId, domain: 'agents.example.test' })
    ).json().value;
    t.not(otherValue, challenge.value);

    const events = recordEvents(services);
    const verify = () =>
      browser.post('/auth/agents/proof/dns-verify', { agent_id: agent.agentId, domain: 'agents.example.test' });
    t.equal((await verify()).json().reason, 'dns_record_missing', 'nothing published yet');
    records.set('_svc-agent.agents.example.test', [[otherValue]]);
    t.equal((await verify()).json().reason, 'dns_record_missing', 'a TXT record for another agent');
    t.same(events, [], 'nothing appended');
    t.equal(
      (await app.inject({ method: 'GET', url: `/agent/${agent.proofId}.json` })).json().claims.channel_control.status,
      'declared',
    );

    records.set('_svc-agent.agents.example.test', [
      [otherValue],
      [challenge.value.slice(0, 20), challenge.value.slice(20)],
    ]);
    const ok = await verify();
    t.equal(ok.statusCode, 200, ok.body);
    t.match(ok.json().evidence, { type: 'domain-control', domain: 'agents.example.test' });
    const vector = (await app.inject({ method: 'GET', url: `/agent/${agent.proofId}.json` })).json();
    t.equal(vector.claims.channel_control.status, 'verified');
    t.match(vector.evidence, [{ type: 'domain-control', domain: 'agents.example.test' }]);
    t.equal(
      (
        await browser.post('/auth/agents/proof/dns-challenge', { agent_id: agent.agentId, domain: 'not a domain' })
      ).json().reason,
      'invalid_request',
    );
  },
);
