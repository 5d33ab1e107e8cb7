import t from 'tap';
import { build, manualClock } from '../../helpers/build.js';
import { purgeOldContacts } from '../../../control-plane/src/contact/contact.js';
import { decodeQuotedPrintable, startSmtpServer } from '../../helpers/smtp.js';
import { recordEvents } from '../../helpers/agents.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['contact', 'receipts'] as const;
const OPERATOR = 'operator@keyplane.example';

async function served(t: Parameters<typeof build>[0], config: Record<string, unknown> = {}) {
  const smtp = await startSmtpServer(t);
  const built = await build(t, {
    areas,
    config: { 'mail.smtpUrl': smtp.url, 'contact.operatorAddress': OPERATOR, ...config },
  });
  return { ...built, smtp, events: recordEvents(built.services) };
}

const send = (
  app: Awaited<ReturnType<typeof build>>['app'],
  payload: Record<string, unknown>,
  headers: Record<string, string> = {},
  ip = '203.0.113.7',
) => app.inject({ method: 'POST', url: '/contact', payload, headers, remoteAddress: ip });

t.test('a JSON message is stored, mailed to the operator over SMTP and receipted', async (t) => {
  const { app, services, smtp, events } = await served(t);
  const res = await send(app, {
    email: ' Ada@Example.COM ',
    topic: 'security',
    message: 'Found an issue.\r\nSecond line\u0007.',
  });
  t.equal(res.statusCode, 200, res.body);
  const body = res.json();
  t.match(body, { ok: true, contactId: /^ctc_[A-Za-z0-9_-]{22}$/, mailed: true, receipt: /^[0-9a-f]{64}$/ });

  const mail = await smtp.next();
  t.same(mail.to, [OPERATOR]);
  const text = decodeQuotedPrintable(mail.raw);
  t.match(text, /Subject: \[Keyplane contact\] security/);
  t.match(text, 'From: ada@example.com');
  t.match(text, 'Found an issue.');
  t.match(text, body.contactId);

  const stored = await services.storage.contacts.get(body.contactId);
  t.match(stored, {
    email: 'ada@example.com',
    topic: 'security',
    message: 'Found an issue.\nSecond line.',
    mailedAt: Number,
  });
  t.match(events.at(-1), { type: 'contact.received', contactId: body.contactId, topic: 'security', mailed: true });
  const receipt = (await app.inject({ method: 'GET', url: `/receipts/${body.receipt}` })).json();
  t.match(receipt.receipt, { kind: 'contact.received', contactId: body.contactId });
  t.notMatch(
    JSON.stringify(receipt.receipt),
    /example\.com|Found an issue/,
    'neither the sender nor the message is in the receipt',
  );
});

t.test('the form posts too, and the page is accessible with a strict CSP', async (t) => {
  const { app, smtp } = await served(t);
  const page = await app.inject({ method: 'GET', url: '/contact' });
  t.equal(page.statusCode, 200);
  t.match(page.headers['content-type'], /text\/html/);
  const csp = String(page.headers['content-security-policy']);
  t.match(csp, /script-src 'nonce-[^']+' 'strict-dynamic'/);
  t.match(csp, /default-src 'none'/);
  t.notMatch(csp, /unsafe-inline/);
  t.notMatch(page.body, /\son[a-z]+=/i, 'no inline handlers');
  for (const id of ['contact-email', 'contact-topic', 'contact-message'])
    t.match(page.body, new RegExp(`<label for="${id}">`), `${id} has a label`);
  t.match(page.body, /<form method="post" action="\/contact"/);

  const form = await app.inject({
    method: 'POST',
    url: '/contact',
    remoteAddress: '203.0.113.8',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    payload: new URLSearchParams({
      email: 'bob@example.org',
      topic: 'general',
      message: 'Hello from a form',
    }).toString(),
  });
  t.equal(form.statusCode, 303);
  t.match(form.headers.location, /^\/contact\?sent=ctc_/);
  t.match(decodeQuotedPrintable((await smtp.next()).raw), 'Hello from a form');
  t.match((await app.inject({ method: 'GET', url: String(form.headers.location) })).body, /data-state="sent"/);
});

t.test('bad messages are refused with clear reasons and leave nothing', async (t) => {
  const { app, services, events } = await served(t, { 'contact.maxMessageChars': 100 });
  const before = events.length;
  const cases: Array<[Record<string, unknown>, number, string]> = [
    [{ email: 'ada@example.com', topic: 'security', message: 'x'.repeat(101) }, 413, 'message_too_long'],
    [{ email: 'not an address', topic: 'security', message: 'hi' }, 400, 'invalid_email'],
    [{ email: 'ada@example.com', topic: 'sales', message: 'hi' }, 400, 'invalid_request'],
    [{ email: 'ada@example.com', topic: 'security', message: ' \n\t ' }, 400, 'invalid_request'],
    [{ email: 'ada@example.com', topic: 'security' }, 400, 'invalid_request'],
  ];
  for (const [payload, status, reason] of cases) {
    const res = await send(app, payload);
    t.equal(res.statusCode, status, JSON.stringify(payload).slice(0, 80));
    t.match(res.json(), { ok: false, reason, message: String });
  }
  t.equal(
    (await send(app, { email: 'ada@example.com', topic: 'security', message: '✓'.repeat(100) })).statusCode,
    200,
    'the cap counts characters, not bytes',
  );
  const huge = await send(app, {
    email: 'ada@example.com',
    topic: 'security',
    message: 'x'.repeat(services.config.http.bodyLimit),
  });
  t.equal(huge.statusCode, 413);
  t.equal(huge.json().reason, 'payload_too_large');
  t.equal(events.length - before, 1, 'only the accepted message left a receipt');
});

t.test('messages are throttled per client address and per sender address', async (t) => {
  const { app } = await served(t, { 'contact.perAddressPerHour': 2, 'contact.operatorAddress': undefined });
  const message = (email: string) => ({ email, topic: 'general', message: 'hi' });
  t.match(
    (await send(app, message('a@example.com'), {}, '198.51.100.1')).json(),
    { ok: true, mailed: false },
    'no operator address: stored, not mailed',
  );
  t.equal((await send(app, message('b@example.com'), {}, '198.51.100.1')).statusCode, 200);
  const sameIp = await send(app, message('c@example.com'), {}, '198.51.100.1');
  t.equal(sameIp.statusCode, 429);
  t.equal(sameIp.json().reason, 'rate_limited');
  t.ok(sameIp.headers['retry-after']);
  t.equal((await send(app, message('a@example.com'), {}, '198.51.100.2')).statusCode, 200);
  const sameSender = await send(app, message('A@example.com'), {}, '198.51.100.3');
  t.equal(sameSender.statusCode, 429, 'one sender from many addresses is throttled too');
});

t.test('messages older than contact.retentionDays are deleted; their receipts stay', async (t) => {
  const clock = manualClock(Date.now());
  const { app, services } = await build(t, { areas, now: clock.now, config: { 'contact.retentionDays': 30 } });
  const old = await send(app, { email: 'old@example.com', topic: 'general', message: 'from long ago' });
  t.equal(old.statusCode, 200, old.body);
  clock.advance(29 * 86_400_000);
  const recent = await send(app, { email: 'new@example.com', topic: 'general', message: 'from this month' });
  t.equal(await purgeOldContacts(services), 0, 'nothing is 30 days old yet');
  clock.advance(86_400_000);
  t.equal(await purgeOldContacts(services), 0, 'exactly 30 days old is not older');
  clock.advance(1);
  t.equal(await purgeOldContacts(services), 1);
  t.equal(await services.storage.contacts.get(old.json().contactId), null, 'the old message and its address are gone');
  t.ok(await services.storage.contacts.get(recent.json().contactId), 'the recent one stays');
  t.ok(await services.storage.receipts.get(old.json().receipt), 'the receipt (no address, no message) stays');
});
