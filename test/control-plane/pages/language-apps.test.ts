import t from 'tap';
import { enrollAgent } from '../../helpers/agents.js';
import { build } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { scriptMessages } from '../../helpers/script-messages.js';
import { accessRuleParts, describeAllowRules } from '#lib/access/evaluate-access.js';
import { translatorFor } from '#lib/i18n/translate.js';
import { accessRuleLine } from '../../../control-plane/src/pages/access-rules.js';

/**
 * The pages of branch i18n40e in German and Arabic (docs/i18n.md "What is translated"): apps,
 * SAML providers, connectors, rollout, the v1 migration guide, the SAML refusal page, the Proof
 * Link page, and the script lines the account and org pages hand to their scripts.
 */

t.test('the apps page, its forms and the connector form in German, and in Arabic right to left', async (t) => {
  const { signIn } = await buildSignedIn(t);
  const { browser } = await signIn({ username: 'alice' });
  const german = await browser.get('/apps', { accept: 'text/html', 'accept-language': 'de' });
  t.equal(german.statusCode, 200);
  t.match(german.body, '<html lang="de" dir="ltr">');
  t.match(german.body, '<h1>Ihre Apps</h1>');
  t.match(german.body, '<label for="client_name">Name der App</label>');
  t.match(german.body, '<legend>Client-Typ</legend>');
  t.match(german.body, '<h2 id="connectors">Ein Werkzeug verbinden</h2>');
  t.match(german.body, '<a href="/auth/step-up?return=%2Fapps">Bestätigen Sie zuerst mit Ihrem Passkey</a>');
  t.match(german.body, 'nav class="lang"', 'the language switcher');
  const registered = await browser.post(
    '/apps/register',
    'client_name=Notizen&redirect_uris=https%3A%2F%2Fnotes.example%2Fcb&client_type=confidential',
    { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', 'accept-language': 'de' },
  );
  t.equal(registered.statusCode, 201);
  t.match(registered.body, '<strong>App registriert.</strong> Client-ID: <code>');
  t.match(registered.body, 'Client-Geheimnis (nur einmal angezeigt, jetzt kopieren):');
  t.match(registered.body, '<td>vertraulich</td>');
  const refused = await browser.post('/apps/connectors', 'connector=grafana&base_url=nonsense', {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'text/html',
    'accept-language': 'de',
  });
  t.equal(refused.statusCode, 400);
  t.match(
    refused.body,
    /<p role="alert" class="error" data-reason="invalid_connector_input">Ein Feld des Konnektors fehlt oder ist ungültig\. Prüfen Sie die Adressen und versuchen Sie es erneut\. <span class="muted">\(<code>invalid_connector_input<\/code>\)/,
  );
  t.notMatch(refused.body, /role="alert"[^>]*>[^<]*base_url/, 'the English message stays out of a German page');
  const connected = await browser.post('/apps/connectors', 'connector=kubelogin', {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'text/html',
    'accept-language': 'de',
  });
  t.equal(connected.statusCode, 201);
  t.match(connected.body, 'Öffentlicher Client: kein Geheimnis (nur PKCE).');
  t.match(connected.body, 'data-msg-copy="Konfiguration kopieren"', 'the copy script’s lines come translated');
  const arabic = await browser.get('/apps?lang=ar', { accept: 'text/html' });
  t.match(arabic.body, '<html lang="ar" dir="rtl">');
  t.match(arabic.body, '<h1>تطبيقاتك</h1>');
});

t.test('the SAML providers page, the rollout page and the connectors page in German and Arabic', async (t) => {
  const { app, signIn } = await buildSignedIn(t);
  const { browser } = await signIn({ username: 'alice' });
  const saml = await browser.get('/apps/saml', { accept: 'text/html', 'accept-language': 'de' });
  t.equal(saml.statusCode, 200);
  t.match(saml.body, '<html lang="de" dir="ltr">');
  t.match(saml.body, '<h1>SAML-Dienstanbieter</h1>');
  t.match(saml.body, 'Metadaten des Identitätsanbieters:');
  const rollout = await browser.get('/rollout', { accept: 'text/html', 'accept-language': 'de' });
  t.equal(rollout.statusCode, 200);
  t.match(rollout.body, '<html lang="de" dir="ltr">');
  t.match(
    rollout.body,
    'Noch kein Projekt hat ein Vertrauensprofil. Beginnen Sie mit <code>keyplane rollout classify FILE</code>.',
  );
  const arabicRollout = await browser.get('/rollout?lang=ar', { accept: 'text/html' });
  t.match(arabicRollout.body, '<html lang="ar" dir="rtl">');
  t.match(arabicRollout.body, '<h1>النشر</h1>');
  const connectors = await app.inject({
    url: '/connectors',
    headers: { 'accept-language': 'fr', accept: 'text/html' },
  });
  t.equal(connectors.statusCode, 200);
  t.match(connectors.body, '<html lang="fr" dir="ltr">');
  t.match(connectors.body, '<h1>Connecteurs</h1>');
  t.match(connectors.body, '<code>use_pkce = true</code> (Grafana 8.3 et suivants).', 'the templates’ notes too');
  t.notMatch(connectors.body, '<span lang="en">', 'nothing on it is left in English');
});

t.test('who may get in and the connector notes in German and Arabic; the JSON API keeps English', async (t) => {
  const { app, signIn } = await buildSignedIn(t);
  const { browser } = await signIn({ username: 'alice', assurance: 'sensitive' });
  // Rules name only orgs the registrant administers.
  await browser.post('/auth/orgs/create', { name: 'Acme' });
  const registered = await browser.post('/apps/register', {
    client_name: 'Wiki gate',
    redirect_uris: ['https://wiki.example.com/_gate/callback'],
    token_endpoint_auth_method: 'client_secret_basic',
    access: { orgs: [{ slug: 'acme', roles: ['admin', 'owner'] }] },
    gateway: {
      mode: 'enforce',
      routes: [
        { path: '/', allow: { orgs: [{ slug: 'acme' }], email_domains: ['example.com'] } },
        { path: '/team', allow: { users: ['eve', 'bob'] } },
        { path: '/open' },
        { path: '/public', public: true },
      ],
    },
  });
  t.equal(registered.statusCode, 201, registered.body);
  const german = await browser.get('/apps', { accept: 'text/html', 'accept-language': 'de' });
  t.match(
    german.body,
    'data-field="sign-in-rules">Anmeldung: nur Administratoren oder Inhaber der Organisation acme.<',
  );
  t.match(
    german.body,
    '<li><code>/</code>: Mitglieder der Organisation acme oder Konten mit einer bestätigten E-Mail-Adresse bei example.com</li>',
  );
  t.match(german.body, '<li><code>/team</code>: die Konten eve oder bob</li>', 'a plural, and the language’s “or”');
  t.match(german.body, '<li><code>/open</code>: jedes angemeldete Konto</li>');
  t.match(german.body, '<li><code>/public</code>: alle (öffentlich)</li>');
  t.notMatch(german.body, '<span lang="en">', 'no English left on the page');
  const arabic = await browser.get('/apps?lang=ar', { accept: 'text/html' });
  t.match(arabic.body, 'data-field="sign-in-rules">تسجيل الدخول: فقط المسؤولون أو المالكون في المؤسسة acme.<');
  t.match(arabic.body, '<li><code>/team</code>: الحسابان eve أو bob</li>', 'Arabic’s dual');
  t.match(arabic.body, '<li><code>/public</code>: أي شخص (عام)</li>');
  t.notMatch(arabic.body, '<span lang="en">');
  const english = await browser.get('/apps?lang=en', { accept: 'text/html' });
  t.match(english.body, '<li><code>/team</code>: the accounts eve or bob</li>');

  const connectors = await app.inject({
    url: '/connectors',
    headers: { 'accept-language': 'de', accept: 'text/html' },
  });
  t.match(connectors.body, '<code>use_pkce = true</code> (ab Grafana 8.3).');
  t.match(
    connectors.body,
    '<li><code>base_url</code>: <code>root_url</code> von Grafana (die URL, unter der man es öffnet).</li>',
  );
  t.match(
    connectors.body,
    '<code>code_challenge_method = &quot;S256&quot;</code>.',
    'a value is shown as written, escaped',
  );
  const arabicConnectors = await app.inject({ url: '/connectors?lang=ar', headers: { accept: 'text/html' } });
  t.match(arabicConnectors.body, '<html lang="ar" dir="rtl">');
  t.match(arabicConnectors.body, '<code>use_pkce = true</code> (Grafana 8.3 وما بعده).');
  t.notMatch(arabicConnectors.body, '<span lang="en">');
  const api = await app.inject({
    url: '/connectors',
    headers: { 'accept-language': 'de', accept: 'application/json' },
  });
  const grafana = (api.json() as { connectors: { name: string; pkce: string; inputs: object[] }[] }).connectors.find(
    (c) => c.name === 'grafana',
  );
  t.equal(grafana?.pkce, '`use_pkce = true` (Grafana 8.3 and later).', 'the JSON API keeps English');
  t.same(Object.keys(grafana?.inputs[0] ?? {}).sort(), ['description', 'example', 'label', 'name', 'required']);
});

t.test('the not-admitted page’s lines: one part per rule, in the reader’s language', async (t) => {
  const parts = accessRuleParts({ orgs: [{ slug: 'acme', roles: ['owner', 'admin'] }, { slug: 'beta' }] });
  t.same(
    parts.map((part) => accessRuleLine(translatorFor('de'), part)),
    ['Inhaber oder Administratoren der Organisation acme', 'Mitglieder der Organisation beta'],
  );
  t.same(
    parts.map((part) => accessRuleLine(translatorFor('ar'), part)),
    ['المالكون أو المسؤولون في المؤسسة acme', 'أعضاء المؤسسة beta'],
  );
  t.same(describeAllowRules({ orgs: [{ slug: 'acme', roles: ['owner', 'admin'] }] }), [
    'owners or admins of the org acme',
  ]);
});

t.test(
  'the v1 migration guide and the SAML refusal page in German; the refusal switcher drops the query',
  async (t) => {
    const { app } = await build(t);
    const guide = await app.inject({ url: '/auth/v1/migrate', headers: { 'accept-language': 'de' } });
    t.equal(guide.statusCode, 200);
    t.match(guide.body, '<html lang="de" dir="ltr">');
    t.match(guide.body, '<h1>Umstieg von der v1-Skriptbrücke auf v2</h1>');
    t.match(guide.body, '<code>npm install @keyplane/sdk</code>');
    t.match(guide.body, '&lt;script src=');
    const refused = await app.inject({
      url: '/saml/sso?SAMLRequest=not-a-request&RelayState=https%3A%2F%2Fattacker.example%2F',
      headers: { 'accept-language': 'de', accept: 'text/html' },
    });
    t.equal(refused.statusCode, 400);
    t.match(refused.body, '<h1>Diese SAML-Anfrage kann nicht fortgesetzt werden</h1>');
    t.match(refused.body, /data-reason="saml_request_invalid"/);
    t.match(refused.body, 'href="/saml/sso?lang=ar"');
    t.notMatch(refused.body, /attacker\.example/);
  },
);

t.test('the Proof Link page in German: claims, statuses and state translated', async (t) => {
  const { app, signIn } = await buildSignedIn(t);
  const { browser } = await signIn({ username: 'alice' });
  const agent = await enrollAgent(app, browser, { name: 'Deploy bot' });
  const proof = await app.inject({
    url: `/agent/${agent.proofId}`,
    headers: { accept: 'text/html', 'accept-language': 'de' },
  });
  t.equal(proof.statusCode, 200);
  t.match(proof.body, '<html lang="de" dir="ltr">');
  t.match(proof.body, '<strong data-state="active">aktiv</strong>');
  t.match(proof.body, '<th scope="row">Kontrolle über den Schlüssel</th>');
  t.match(proof.body, 'Diese Seite zeigt nur öffentliche Aussagen.');
});

t.test('the account script’s confirmations, the invite line and the e-mail lines come translated', async (t) => {
  const { signIn } = await buildSignedIn(t);
  const { browser } = await signIn({ username: 'alice' });
  const account = await browser.get('/account', { accept: 'text/html', 'accept-language': 'de' });
  const lines = scriptMessages(account.body).lines as Record<string, string>;
  t.equal(lines.passkeyRenamed, 'Passkey umbenannt.');
  t.equal(lines.deleteConfirm, 'Ihr Konto endgültig löschen? Das lässt sich nicht rückgängig machen.');
  t.match(account.body, 'data-msg-email-sent="Wir haben einen Bestätigungslink an {email} gesendet."');
  const english = await browser.get('/account', { accept: 'text/html' });
  t.equal((scriptMessages(english.body).lines as Record<string, string>).passkeyRenamed, 'Passkey renamed.');
  t.equal((await browser.post('/auth/orgs/create', { name: 'Acme' })).statusCode, 200);
  const org = await browser.get('/org/acme', { accept: 'text/html', 'accept-language': 'de' });
  t.match(org.body, 'data-msg-invited-admin="{username} als Administrator eingeladen.');
  t.match(org.body, 'data-msg-not-accepted="(noch nicht angenommen)"');
});

t.test('the refused-request page says in German that the app is unknown', async (t) => {
  const { app } = await build(t);
  const unknown = await app.inject({
    url: '/auth/authorize?client_id=cl_nobody&response_type=code&redirect_uri=https%3A%2F%2Fx.example%2Fcb&scope=openid',
    headers: { accept: 'text/html', 'accept-language': 'de' },
  });
  t.equal(unknown.statusCode, 400);
  t.match(unknown.body, '<html lang="de" dir="ltr">');
  t.match(unknown.body, 'Diese App ist hier nicht registriert');
  t.match(unknown.body, 'data-reason="unknown_client"');
  t.notMatch(unknown.body, 'is not registered here', 'the English message stays out of a German page');
});
