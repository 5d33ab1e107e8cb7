import t from 'tap';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateTotpCode } from '#lib/totp/totp.js';
import { manualClock, tempDir } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

t.test('the account shows e-mails, TOTP state and the TOTP, backup-code and e-mail sections', async (t) => {
  const clock = manualClock();
  const { signIn, services } = await buildSignedIn(t, { now: clock.now });
  const { browser, identityId } = await signIn({ username: 'ada' });

  let json = (await browser.get('/account?format=json')).json();
  t.equal(json.totp, 'off');
  t.same(json.emails, []);

  await browser.post('/auth/email/add', { email: 'ada@example.com' });
  const row = (await services.storage.emails.listByIdentity(identityId))[0]!;
  await services.storage.emails.add({
    emailId: 'eml_other',
    identityId,
    email: 'other@example.com',
    createdAt: clock.now(),
    verifiedAt: null,
  });
  await services.storage.emails.markVerified(row.emailId, clock.now());
  const { secret } = (await browser.post('/auth/totp/setup')).json();
  t.equal((await browser.get('/account?format=json')).json().totp, 'pending');
  await browser.post('/auth/totp/confirm', { code: generateTotpCode(secret, clock.now()) });
  await browser.post('/auth/recovery/regenerate');

  json = (await browser.get('/account?format=json')).json();
  t.equal(json.totp, 'active');
  t.same(json.emails, [
    { email: 'ada@example.com', verified: true },
    { email: 'other@example.com', verified: false },
  ]);

  const page = await browser.get('/account', { accept: 'text/html' });
  t.equal(page.statusCode, 200);
  t.match(page.body, /data-sf-action="totp-disable"/);
  t.match(page.body, /10 unused backup codes/);
  t.match(page.body, /data-sf-form="email-add"/);
  t.match(page.body, /<label for="email-new">/);
  t.match(page.body, /<script type="module" nonce="[^"]+" src="\/assets\/second-factor\.js"><\/script>/);
});

t.test('the section script is served as a valid ES module', async (t) => {
  const { app } = await buildSignedIn(t);
  const res = await app.inject({ method: 'GET', url: '/assets/second-factor.js' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/javascript/);
  const file = join(tempDir(t), 'second-factor.mjs');
  writeFileSync(file, res.body);
  t.doesNotThrow(() => execFileSync(process.execPath, ['--check', file], { stdio: 'pipe' }), 'parses');
  t.notMatch(res.body, /innerHTML/, 'no HTML is injected from responses');
});
