import t, { type Test } from 'tap';
import { buildSignedIn, type Browser } from '../../helpers/signed-in.js';
import { manualClock } from '../../helpers/build.js';
import { startTxtServer } from '../../helpers/dns-server.js';
import { recheckMailDomains, viewMailDomain } from '../../../control-plane/src/orgs/mail-domains.js';

const DAY = 86_400_000;

async function setUp(t: Test) {
  const records = new Map<string, string[][]>();
  const dns = await startTxtServer(t, records);
  const clock = manualClock();
  const built = await buildSignedIn(t, {
    config: { 'dns.resolvers': [dns.address] },
    now: clock.now,
    areas: ['orgs'],
  });
  const owner = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  const rival = await built.signIn({ username: 'rita', assurance: 'sensitive' });
  for (const [who, name] of [
    [owner.browser, 'Acme'],
    [rival.browser, 'Rival'],
  ] as const)
    t.equal((await who.post('/auth/orgs/create', { name })).statusCode, 200);
  const add = async (who: Browser, slug: string, domain: string) => {
    const res = await who.post(`/org/${slug}/mail-domains`, { domain });
    t.equal(res.statusCode, 200, res.body);
    return res.json() as { domain: string; record: { name: string; type: string; value: string } };
  };
  const verify = (who: Browser, slug: string, domain: string) => who.post(`/org/${slug}/mail-domains/${domain}/verify`);
  const publish = (record: { name: string; value: string }) => records.set(record.name, [[record.value]]);
  return { ...built, clock, records, owner, rival, add, verify, publish };
}

t.test('an owner proves a mail domain by a TXT record on that exact domain', async (t) => {
  const { owner, add, verify, publish, records } = await setUp(t);
  const listed = await add(owner.browser, 'acme', 'Acme.Example');
  t.equal(listed.domain, 'acme.example', 'stored lower-case');
  t.equal(listed.record.name, '_keyplane-mail.acme.example');
  t.equal(listed.record.type, 'TXT');
  t.match(listed.record.value, /^keyplane-mail=/);
  t.same(
    (await add(owner.browser, 'acme', 'acme.example')).record,
    listed.record,
    'listing again answers the same record',
  );

  const missing = await verify(owner.browser, 'acme', 'acme.example');
  t.equal(missing.statusCode, 409);
  t.equal(missing.json().reason, 'domain_not_verified');
  // A site proof (`_keyplane.`) or a record on a parent domain proves nothing for the mail domain.
  records.set('_keyplane.acme.example', [[listed.record.value]]);
  t.equal((await verify(owner.browser, 'acme', 'acme.example')).json().reason, 'domain_not_verified');
  const sub = await add(owner.browser, 'acme', 'eu.acme.example');
  publish(listed.record);
  t.equal(
    (await verify(owner.browser, 'acme', 'eu.acme.example')).json().reason,
    'domain_not_verified',
    "a parent's proof does not prove a subdomain",
  );
  t.ok(sub.record.name.endsWith('.eu.acme.example'));

  const proved = await verify(owner.browser, 'acme', 'acme.example');
  t.equal(proved.statusCode, 200, proved.body);
  t.match(proved.json(), { ok: true, domain: 'acme.example', verified: true, receipt: /^[0-9a-f]{64}$/ });
  const list = (await owner.browser.get('/org/acme/mail-domains')).json();
  t.match(list.domains, [
    { domain: 'acme.example', verified: true, lapsesAt: null },
    { domain: 'eu.acme.example', verified: false, verifiedAt: null },
  ]);
});

t.test('a mail domain is held by the first org to prove it: another gets 409 domain_claimed', async (t) => {
  const { owner, rival, add, verify, publish } = await setUp(t);
  const ours = await add(owner.browser, 'acme', 'acme.example');
  const theirs = await add(rival.browser, 'rival', 'acme.example');
  t.not(theirs.record.value, ours.record.value, 'each org has its own proof value');
  publish(ours.record);
  t.equal((await verify(owner.browser, 'acme', 'acme.example')).statusCode, 200);
  // Even with its own record published, the second org is refused.
  publish(theirs.record);
  const refused = await verify(rival.browser, 'rival', 'acme.example');
  t.equal(refused.statusCode, 409);
  t.equal(refused.json().reason, 'domain_claimed');
  t.equal((await verify(owner.browser, 'acme', 'acme.example')).statusCode, 200, 'the holder proving again is fine');
  // Once the holder removes it, the other org may prove it.
  t.equal((await owner.browser.request('DELETE', '/org/acme/mail-domains/acme.example')).statusCode, 200);
  t.equal((await verify(rival.browser, 'rival', 'acme.example')).statusCode, 200);
});

t.test('only an owner at sensitive adds, proves and removes mail domains', async (t) => {
  const { app, owner, signIn, add } = await setUp(t);
  await add(owner.browser, 'acme', 'acme.example');
  const admin = await signIn({ username: 'adam', assurance: 'sensitive' });
  t.equal((await owner.browser.post('/org/acme/members/invite', { username: 'adam', role: 'admin' })).statusCode, 200);
  t.equal((await admin.browser.post('/org/acme/members/accept')).statusCode, 200);
  const byAdmin = await admin.browser.post('/org/acme/mail-domains', { domain: 'other.example' });
  t.equal(byAdmin.statusCode, 403);
  t.equal(byAdmin.json().reason, 'forbidden');
  t.equal((await admin.browser.get('/org/acme/mail-domains')).statusCode, 200, 'members read them');

  const plain = await signIn({ username: 'olivia', assurance: 'passkey' });
  for (const [method, url, payload] of [
    ['POST', '/org/acme/mail-domains', { domain: 'other.example' }],
    ['POST', '/org/acme/mail-domains/acme.example/verify', undefined],
    ['DELETE', '/org/acme/mail-domains/acme.example', undefined],
  ] as const) {
    const res = await plain.browser.request(method, url, payload);
    t.equal(res.statusCode, 403, `${method} ${url}`);
    t.equal(res.json().reason, 'insufficient_assurance');
  }
  const outsider = await signIn({ username: 'otto', assurance: 'sensitive' });
  t.equal((await outsider.browser.post('/org/acme/mail-domains', { domain: 'x.example' })).statusCode, 404);
  t.equal((await app.inject({ method: 'GET', url: '/org/acme/mail-domains' })).statusCode, 401);
  for (const domain of ['localhost', 'a..example', '-a.example', '10.0.0.1', '*.acme.example', 'a b.example']) {
    const res = await owner.browser.post('/org/acme/mail-domains', { domain });
    t.equal(res.statusCode, 400, domain);
    t.equal(res.json().reason, 'invalid_request');
  }
  t.equal((await owner.browser.post('/org/acme/mail-domains/nope.example/verify')).json().reason, 'not_found');
});

t.test('the daily re-check keeps a proof, then lapses it after 7 days without the record', async (t) => {
  const { owner, add, verify, publish, records, services, clock, signIn } = await setUp(t);
  const listed = await add(owner.browser, 'acme', 'acme.example');
  publish(listed.record);
  t.equal((await verify(owner.browser, 'acme', 'acme.example')).statusCode, 200);
  const { orgId } = (await services.storage.orgs.getBySlug('acme'))!;
  // Read from storage: the owner's session does not outlive ten days of the test clock.
  const current = async () => viewMailDomain((await services.storage.orgs.mailDomains(orgId))[0]!);
  t.same(await recheckMailDomains(services), [], 'not due within the day');
  clock.advance(DAY + 1);
  t.same(await recheckMailDomains(services), []);
  records.clear();
  clock.advance(DAY + 1);
  t.same(await recheckMailDomains(services), [], 'a first failure starts the grace period');
  t.match(await current(), { verified: true, lapsesAt: new Date(clock.now() + 7 * DAY).toISOString() });
  clock.advance(6 * DAY);
  t.same(await recheckMailDomains(services), [], 'still within the grace');
  clock.advance(DAY + 1);
  const [domainId] = await recheckMailDomains(services);
  t.match(domainId, /^mdm_/);
  t.match(await current(), { verified: false, lapsesAt: null }, 'lapsed');
  t.equal(await services.storage.orgs.mailDomainHolder('acme.example'), null, 'no longer claimed');

  // Proved again; a record that comes back within the grace ends the failing run.
  const again = await signIn({ username: 'olivia', assurance: 'sensitive' });
  publish(listed.record);
  t.equal((await verify(again.browser, 'acme', 'acme.example')).statusCode, 200);
  records.clear();
  clock.advance(DAY + 1);
  await recheckMailDomains(services);
  t.not((await current()).lapsesAt, null);
  publish(listed.record);
  clock.advance(DAY + 1);
  await recheckMailDomains(services);
  t.match(await current(), { verified: true, lapsesAt: null });
});
