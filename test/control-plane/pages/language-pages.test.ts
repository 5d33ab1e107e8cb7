import t from 'tap';
import { enrollAgent } from '../../helpers/agents.js';
import { build } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { scriptMessages } from '../../helpers/script-messages.js';

/**
 * The pages of branch i18n40b in German and Arabic (docs/i18n.md): changelog, contact, scan,
 * agents, orgs, apps. The sign-in page and the language negotiation itself are in language.test.ts.
 */

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['docs', 'contact', 'scan', 'agents', 'orgs', 'assets', 'account', 'recovery'] as const;

t.test('the changelog page: chrome in German, Arabic right to left, the entries kept in English', async (t) => {
  const { app } = await build(t, { areas });
  const german = await app.inject({ url: '/changelog', headers: { 'accept-language': 'de-DE' } });
  t.equal(german.statusCode, 200);
  t.match(german.body, '<html lang="de" dir="ltr">');
  t.match(german.body, '<h1>Änderungsprotokoll</h1>');
  t.match(german.body, 'Auch als versioniertes JSON: <a href="/changelog?format=json">/changelog?format=json</a>.');
  t.match(german.body, '<h2 id="v-Unreleased">Unveröffentlicht');
  t.match(
    german.body,
    /<h2 id="v-0\.1\.0">0\.1\.0 <span class="muted">\(<time datetime="2026-11-22">22\.11\.2026<\/time>\)/,
  );
  t.match(german.body, '<li><strong>Hinzugefügt</strong>: <span lang="en">');
  t.match(german.body, 'Die Einträge sind auf Englisch verfasst.');
  t.match(german.headers['vary'], /accept-language/);
  t.match(german.headers['cache-control'], /^private/);
  const arabic = await app.inject({ url: '/changelog?lang=ar' });
  t.equal(arabic.statusCode, 200, 'the switcher parameter is accepted');
  t.match(arabic.body, '<html lang="ar" dir="rtl">');
  t.match(arabic.body, '<h1>سجل التغييرات</h1>');
  t.match(arabic.body, '<strong>أُضيف</strong>');
  const english = await app.inject({ url: '/changelog' });
  t.match(english.body, '<h1>Changelog</h1>');
  t.notMatch(english.body, 'data-notice="english-entries"');
});

t.test("the contact page in German and in Arabic, numbers in the reader's locale", async (t) => {
  const { app } = await build(t, { areas });
  const german = await app.inject({ url: '/contact', headers: { 'accept-language': 'de' } });
  t.equal(german.statusCode, 200);
  t.match(german.body, '<html lang="de" dir="ltr">');
  t.match(german.body, '<h1>Den Betreiber kontaktieren</h1>');
  t.match(german.body, '<label for="contact-email">Ihre E-Mail-Adresse</label>');
  t.match(german.body, '<option value="security">Sicherheitsmeldung</option>');
  t.match(german.body, 'Höchstens 4.000 Zeichen.');
  t.match(german.body, '<button type="submit" data-action="contact">Senden</button>');
  const sent = await app.inject({ url: '/contact?sent=c1', headers: { 'accept-language': 'de' } });
  t.match(sent.body, 'Vielen Dank: Ihre Nachricht ist eingegangen.');
  const arabic = await app.inject({ url: '/contact?lang=ar' });
  t.match(arabic.body, '<html lang="ar" dir="rtl">');
  t.match(arabic.body, '<h1>تواصل مع المشغّل</h1>');
  t.match(arabic.body, '<option value="general">سؤال عام</option>');
});

t.test('the public scan page in German and in Arabic', async (t) => {
  const { app } = await build(t, { areas });
  const german = await app.inject({
    url: '/scan?url=https%3A%2F%2Fnever.example%2F',
    headers: { 'accept-language': 'de' },
  });
  t.equal(german.statusCode, 200);
  t.match(german.body, '<html lang="de" dir="ltr">');
  t.match(german.body, '<h1>Sicherheitsprüfung einer Website</h1>');
  t.match(german.body, '<label for="scan-url">URL der Website (https)</label>');
  t.match(german.body, '<button type="submit" data-action="scan">Prüfen</button>');
  t.match(german.body, '<p role="status">Diese URL wurde noch nicht geprüft.</p>');
  const arabic = await app.inject({ url: '/scan?url=nonsense&lang=ar' });
  t.match(arabic.body, '<html lang="ar" dir="rtl">');
  t.match(arabic.body, '<h1>فحص أمان موقع الويب</h1>');
  t.match(arabic.body, 'لا يمكن فحص عنوان URL هذا');
});

t.test('the agent fleet and profile pages in German and in Arabic', async (t) => {
  const { app, signIn } = await buildSignedIn(t, { areas });
  const { browser } = await signIn({ username: 'alice' });
  const agent = await enrollAgent(app, browser, { name: 'Deploy bot' });
  const fleet = await browser.get('/account/agents', { accept: 'text/html', 'accept-language': 'de' });
  t.equal(fleet.statusCode, 200);
  t.match(fleet.body, '<html lang="de" dir="ltr">');
  t.match(fleet.body, '<h1>Ihre Agenten</h1>');
  t.match(fleet.body, '<button type="submit" data-action="approve">Bestätigen</button>');
  t.match(fleet.body, '<td data-state="active">aktiv</td>');
  t.match(fleet.body, /\d von 4 Angaben bestätigt/);
  const profile = await browser.get(`/account/agents/${agent.agentId}?lang=ar`, { accept: 'text/html' });
  t.equal(profile.statusCode, 200);
  t.match(profile.body, '<html lang="ar" dir="rtl">');
  t.match(profile.body, '<strong data-state="active">نشط</strong>');
  t.match(profile.body, 'data-agent-action="suspend"');
  t.match(profile.body, '<h2>الأذونات</h2>');
});

t.test('the org dashboard in German and in Arabic', async (t) => {
  const { signIn } = await buildSignedIn(t, { areas });
  const { browser } = await signIn({ username: 'alice' });
  const created = await browser.post('/auth/orgs/create', { name: 'Acme' });
  t.equal(created.statusCode, 200);
  const german = await browser.get('/org/acme', { accept: 'text/html', 'accept-language': 'de' });
  t.equal(german.statusCode, 200);
  t.match(german.body, '<html lang="de" dir="ltr">');
  t.match(german.body, 'Ihre Rolle: <strong data-field="role" data-value="owner">Inhaber</strong>.');
  t.match(german.body, '<h2 id="members-h">Mitglieder</h2>');
  t.match(german.body, '<option value="admin">Administrator</option>');
  t.match(german.body, '<button type="submit" data-action="add-site">Website hinzufügen</button>');
  const arabic = await browser.get('/org/acme?lang=ar', { accept: 'text/html' });
  t.match(arabic.body, '<html lang="ar" dir="rtl">');
  t.match(arabic.body, '<h2 id="sites-h">المواقع</h2>');
  t.match(arabic.body, '<li class="muted" data-none>لا توجد</li>');
});

t.test(
  "the scripts' messages come translated by reason in a JSON block, and data-msg-done on the agents page",
  async (t) => {
    const { app, signIn } = await buildSignedIn(t, { areas });
    const { browser } = await signIn({ username: 'alice' });
    const german = scriptMessages((await app.inject({ url: '/contact', headers: { 'accept-language': 'de' } })).body);
    t.equal(german.locale, 'de');
    t.equal(german.reasons.rate_limited, 'Zu viele Versuche. Warten Sie eine Minute und versuchen Sie es erneut.');
    t.equal(german.reasons.origin_mismatch, 'Diese Anfrage kam von einer anderen Website und wurde abgelehnt.');
    t.equal(german.working, 'Wird bearbeitet …');
    t.equal(german.failed, 'Etwas ist schiefgelaufen. Bitte versuchen Sie es erneut.');
    for (const reason of [
      'rate_limited',
      'invalid_request',
      'origin_mismatch',
      'not_found',
      'forbidden',
      'unauthorized',
      'step_up_required',
      'totp_invalid',
      'locked_out',
      'payload_too_large',
      'unavailable',
    ])
      t.type(german.reasons[reason], 'string', reason);
    const arabicPage = await browser.get('/account/agents?lang=ar', { accept: 'text/html' });
    const arabic = scriptMessages(arabicPage.body);
    t.equal(arabic.locale, 'ar');
    t.equal(arabic.reasons.locked_out, 'رموز خاطئة كثيرة جدًا. حاول لاحقًا.');
    t.equal(arabic.cancelled, 'أُلغي طلب مفتاح المرور أو انتهت مهلته.');
    t.match(arabicPage.body, '<form id="approve" data-msg-done="تمت الموافقة على التسجيل: يمكن للوكيل الآن إكماله.">');
    const english = scriptMessages((await app.inject({ url: '/contact' })).body);
    t.equal(english.reasons.rate_limited, 'Too many attempts. Wait a minute and try again.');
    const common = await app.inject({ url: '/assets/common.js' });
    t.match(common.body, "document.getElementById('kp-messages')");
  },
);

t.test("the account page's TOTP, backup-code and e-mail sections in German and in Arabic", async (t) => {
  const { signIn } = await buildSignedIn(t, { areas });
  const { browser } = await signIn({ username: 'alice' });
  const english = await browser.get('/account', { accept: 'text/html' });
  t.match(english.body, '<h3 id="totp-h">Authenticator app (TOTP)</h3>');
  t.match(english.body, '<span id="recovery-count">No backup codes yet.</span>');
  const german = await browser.get('/account', { accept: 'text/html', 'accept-language': 'de' });
  t.match(german.body, '<html lang="de" dir="ltr">');
  t.match(german.body, '<h3 id="totp-h">Authenticator-App (TOTP)</h3>');
  t.match(german.body, '<button type="button" data-sf-action="totp-setup">TOTP einrichten</button>');
  t.match(german.body, '<span id="recovery-count">Noch keine Backup-Codes.</span>');
  t.match(german.body, '<label for="email-new">E-Mail-Adresse</label>');
  t.match(german.body, '<button type="submit">Adresse hinzufügen</button>');
  await browser.post('/auth/recovery/regenerate');
  const german10 = await browser.get('/account', { accept: 'text/html', 'accept-language': 'de' });
  t.match(german10.body, '<span id="recovery-count">10 unbenutzte Backup-Codes.</span>');
  // The second-factor script's lines, translated in data-msg-* attributes.
  t.match(german10.body, 'data-msg-on="TOTP ist eingeschaltet."');
  t.match(
    german10.body,
    'data-msg-regenerate-confirm="10 neue Backup-Codes erstellen? Ihre alten Codes funktionieren dann nicht mehr."',
  );
  t.match(german10.body, 'data-msg-fresh-count="10 unbenutzte Backup-Codes."');
  const arabic = await browser.get('/account?lang=ar', { accept: 'text/html' });
  t.match(arabic.body, '<html lang="ar" dir="rtl">');
  t.match(arabic.body, '<h3 id="recovery-h">الرموز الاحتياطية</h3>');
  t.match(arabic.body, '<span id="recovery-count">10 رموز احتياطية غير مستخدمة.</span>');
  t.match(arabic.body, 'alt="رمز QR للمسح بتطبيق المصادقة"');
});

t.test("the account page's approvals and organizations sections in German and in Arabic", async (t) => {
  const { signIn } = await buildSignedIn(t, { areas });
  const { browser } = await signIn({ username: 'alice' });
  const english = await browser.get('/account', { accept: 'text/html' });
  t.match(english.body, '<h2 id="approvals-h">Apps you approved</h2>');
  t.match(english.body, 'You belong to no organization yet.');
  const created = await browser.post('/auth/orgs/create', { name: 'Acme' });
  t.equal(created.statusCode, 200);
  const german = await browser.get('/account', { accept: 'text/html', 'accept-language': 'de' });
  t.match(german.body, '<h2 id="approvals-h">Von Ihnen zugelassene Apps</h2>');
  t.match(german.body, 'Sie haben noch keine App zugelassen.');
  t.match(german.body, '<h2 id="orgs-h">Organisationen</h2>');
  t.match(german.body, '<a href="/org/acme">Acme</a> · Inhaber</li>');
  t.match(german.body, '<h3 id="org-create-h">Organisation erstellen</h3>');
  t.match(german.body, '<button type="submit" data-action="create-org">Erstellen</button>');
  const arabic = await browser.get('/account?lang=ar', { accept: 'text/html' });
  t.match(arabic.body, '<h2 id="orgs-h">المؤسسات</h2>');
  t.match(arabic.body, '<h2 id="approvals-h">التطبيقات التي وافقت عليها</h2>');
});
