import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createMailer } from '../../../control-plane/src/mail/mailer.js';
import { describeLifetime, magicLinkMail, verificationMail } from '../../../control-plane/src/mail/templates.js';
import { tempDir } from '../../helpers/build.js';

t.test('lifetimes read as a person says them', async (t) => {
  t.equal(describeLifetime(86_400), '24 hours');
  t.equal(describeLifetime(600), '10 minutes');
  t.equal(describeLifetime(60), '1 minute');
  t.equal(describeLifetime(3_600), '1 hour');
  t.equal(describeLifetime(3 * 86_400), '3 days');
  t.equal(describeLifetime(90), '2 minutes');
});

t.test('the .eml in the dev outbox keeps each link on one line, 7bit, in both parts', async (t) => {
  const dataDir = tempDir(t);
  const mailer = createMailer({ from: 'keyplane@localhost', dataDir });
  const link = `http://localhost:4400/auth/email/verify?token=${'A'.repeat(43)}&return=%2Faccount%2Fsettings`;
  await mailer.send(verificationMail('ada@example.com', link, 86_400));
  await mailer.send(magicLinkMail('ada@example.com', link.replace('email/verify', 'magic'), 600));
  const [verification, magic] = readdirSync(join(dataDir, 'outbox'))
    .sort()
    .map((name) => readFileSync(join(dataDir, 'outbox', name), 'utf8'));
  t.match(verification, /The link works once, for 24 hours\./, 'not "1440 minutes"');
  t.match(magic, /The link works once, for 10 minutes,/);
  for (const raw of [verification!, magic!]) {
    t.notMatch(raw, /quoted-printable/, 'nothing folds the link');
    t.notMatch(raw, /=\r\n/, 'no soft line breaks');
    t.ok(
      raw.includes(`: ${link.replace('email/verify', raw === magic ? 'magic' : 'email/verify')}\r\n`),
      'the text link is whole',
    );
    t.ok(
      raw.includes(
        `href="${link.replace('email/verify', raw === magic ? 'magic' : 'email/verify').replace('&', '&amp;')}"`,
      ),
      'the HTML link is whole',
    );
  }
  await mailer.close();
});

t.test('a part that is not plain ASCII is still left to nodemailer to encode', async (t) => {
  const dataDir = tempDir(t);
  const mailer = createMailer({ from: 'keyplane@localhost', dataDir });
  await mailer.send({ to: 'ada@example.com', subject: 'x', text: 'Grüße\n' });
  const [raw] = readdirSync(join(dataDir, 'outbox')).map((name) => readFileSync(join(dataDir, 'outbox', name), 'utf8'));
  t.match(raw, /Content-Transfer-Encoding: quoted-printable/);
  await mailer.close();
});

t.test('the mails are written in the locale given, lifetimes with its plurals', async (t) => {
  t.equal(describeLifetime(600, 'de'), '10 Minuten');
  t.equal(describeLifetime(3_600, 'fr'), '1 heure');
  t.equal(describeLifetime(2 * 86_400, 'ar'), 'يومين');
  const de = magicLinkMail('a@example.com', 'https://id.example/l/x', 600, 'de');
  t.equal(de.subject, 'Ihr Keyplane-Anmeldelink');
  t.match(de.text, 'Der Link funktioniert einmal, 10 Minuten lang');
  t.match(de.text, 'Anmelden: https://id.example/l/x');
  t.match(de.html, '<html lang="de" dir="ltr">');
  const ar = verificationMail('a@example.com', 'https://id.example/v/x', 86_400, 'ar');
  t.match(ar.html, '<html lang="ar" dir="rtl">');
  t.equal(ar.subject, 'أكّد عنوان بريدك الإلكتروني لدى Keyplane');
});
