import t from 'tap';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createMailer } from '../../../control-plane/src/mail/mailer.js';
import { magicLinkMail, verificationMail } from '../../../control-plane/src/mail/templates.js';
import { tempDir } from '../../helpers/build.js';
import { linkIn, startSmtpServer } from '../../helpers/smtp.js';

const LINK = 'http://localhost:4400/auth/magic?token=abc_DEF-123&return=%2Faccount&project=Demo';

t.test('sends a magic-link mail through a real SMTP server', async (t) => {
  const smtp = await startSmtpServer(t);
  const mailer = createMailer({ smtpUrl: smtp.url, from: 'Keyplane <no-reply@keyplane.test>', dataDir: tempDir(t) });
  t.teardown(() => mailer.close());
  t.equal(mailer.kind, 'smtp');
  await mailer.send(magicLinkMail('ada@example.com', LINK, 600));
  const mail = await smtp.next();
  t.same(mail.to, ['ada@example.com']);
  t.equal(mail.from, 'no-reply@keyplane.test');
  t.match(mail.raw, /^Subject: Your Keyplane sign-in link\r$/m);
  t.equal(linkIn(mail.raw, '/auth/magic'), LINK, 'the link arrives intact');
  t.match(mail.raw, /10 minutes/);
});

t.test('enqueued mail is sent in the background and idle() waits for it', async (t) => {
  const smtp = await startSmtpServer(t);
  const mailer = createMailer({ smtpUrl: smtp.url, from: 'Keyplane <no-reply@keyplane.test>', dataDir: tempDir(t) });
  t.teardown(() => mailer.close());
  mailer.enqueue(verificationMail('bob@example.com', 'http://localhost:4400/auth/email/verify?token=xyz', 86_400));
  await mailer.idle();
  t.equal(smtp.received.length, 1);
  t.equal(linkIn(smtp.received[0]!.raw, '/auth/email/verify'), 'http://localhost:4400/auth/email/verify?token=xyz');
});

t.test('a failing SMTP server is reported, never thrown at the caller', async (t) => {
  const errors: unknown[] = [];
  const mailer = createMailer({
    smtpUrl: 'smtp://127.0.0.1:1',
    from: 'Keyplane <no-reply@keyplane.test>',
    dataDir: tempDir(t),
    onError: (e) => errors.push(e),
  });
  mailer.enqueue(magicLinkMail('ada@example.com', LINK, 600));
  await mailer.idle();
  await mailer.close();
  t.equal(errors.length, 1);
});

t.test('without SMTP, writes RFC 5322 files to <dataDir>/outbox/', async (t) => {
  const dataDir = tempDir(t);
  const mailer = createMailer({ from: 'Keyplane <no-reply@keyplane.test>', dataDir });
  t.equal(mailer.kind, 'outbox');
  await mailer.send(magicLinkMail('ada@example.com', LINK, 600));
  const outbox = join(dataDir, 'outbox');
  const files = readdirSync(outbox);
  t.equal(files.length, 1);
  t.match(files[0], /\.eml$/);
  t.equal(statSync(join(outbox, files[0]!)).mode & 0o777, 0o600, 'only the server user can read it');
  const raw = readFileSync(join(outbox, files[0]!), 'utf8');
  t.match(raw, /^From: Keyplane <no-reply@keyplane\.test>\r$/m);
  t.match(raw, /^To: ada@example\.com\r$/m);
  t.match(raw, /^Message-ID: <.+>\r$/m);
  t.match(raw, /^Date: .+\r$/m);
  t.match(raw, /\r\n\r\n/, 'CRLF line endings, header and body separated');
  t.equal(linkIn(raw, '/auth/magic'), LINK);
  await mailer.close();
});

t.test('end to end over SMTP: verify an address, then sign in with a magic link from the mail', async (t) => {
  const { buildSignedIn, Browser } = await import('../../helpers/signed-in.js');
  const smtp = await startSmtpServer(t);
  const { app, signIn, services } = await buildSignedIn(t, {
    config: { 'mail.smtpUrl': smtp.url, 'mail.from': 'Keyplane <no-reply@keyplane.test>' },
  });
  t.equal(services.mailer.kind, 'smtp');
  const { browser, identityId } = await signIn({ username: 'ada' });

  t.equal((await browser.post('/auth/email/add', { email: 'ada@example.com' })).statusCode, 200);
  const verification = await smtp.next();
  t.same(verification.to, ['ada@example.com']);
  const verifyLink = new URL(linkIn(verification.raw, '/auth/email/verify')!);
  const verified = await new Browser(app).post(
    '/auth/email/verify',
    { token: verifyLink.searchParams.get('token') },
    { accept: 'application/json' },
  );
  t.match(verified.json(), { ok: true, verified: true });

  const laptop = new Browser(app);
  const asked = await laptop.post('/auth/magic/request', { email: 'ada@example.com' });
  t.equal(asked.statusCode, 200);
  const magic = await smtp.next();
  t.same(magic.to, ['ada@example.com']);
  t.match(magic.raw, /^Subject: Your Keyplane sign-in link\r$/m);
  const magicLink = new URL(linkIn(magic.raw, '/auth/magic')!);
  const landed = await laptop.get(magicLink.pathname + magicLink.search);
  t.equal(landed.statusCode, 303);
  t.equal(landed.headers.location, '/account');
  const live = await services.storage.sessions.listLive(identityId, services.now());
  t.ok(
    live.some((s) => s.assurance === 'email'),
    'signed in at email',
  );
  t.equal(readdirSync(join(services.config.dataDir)).includes('outbox'), false, 'nothing went to the outbox');
});
