import t from 'tap';
import { hasTxtRecord, lookupTxt } from '#lib/dns/txt-lookup.js';
import { startTxtServer } from '../../helpers/dns-server.js';

t.test('reads TXT records from the configured resolver, joining character-strings', async (t) => {
  const { address } = await startTxtServer(
    t,
    new Map([['_svc-agent.example.test', [['svc-agent=abc'], ['svc-agent=', 'def'], ['unrelated']]]]),
  );
  const options = { resolvers: [address], timeoutMs: 1000, tries: 1 };
  t.same(await lookupTxt('_svc-agent.example.test', options), {
    ok: true,
    records: ['svc-agent=abc', 'svc-agent=def', 'unrelated'],
  });
  t.equal(await hasTxtRecord('_svc-agent.example.test', 'svc-agent=def', options), true);
  t.equal(
    await hasTxtRecord('_svc-agent.example.test', 'svc-agent=other', options),
    false,
    'a record for another value does not match',
  );
  const missing = await lookupTxt('_svc-agent.nothing.test', options);
  t.equal(missing.ok, false);
  t.equal(await hasTxtRecord('_svc-agent.nothing.test', 'svc-agent=abc', options), false);
});

t.test('an unreachable resolver is a failure, not an exception', async (t) => {
  const result = await lookupTxt('_svc-agent.example.test', { resolvers: ['127.0.0.1:9'], timeoutMs: 300, tries: 1 });
  t.same(result, { ok: false, failure: 'unreachable' });
});
