import t from 'tap';
import { Browser } from '../../helpers/signed-in.js';
import { linkIn } from '../../helpers/smtp.js';
import { buildWatched } from '../../helpers/watched.js';

/** What the confirmation page's button does: POST the token (JSON, or the form as a browser sends it). */
function confirm(browser: Browser, link: URL, form = false) {
  const token = link.searchParams.get('token') ?? '';
  return form
    ? browser.post('/auth/email/verify', `token=${encodeURIComponent(token)}`, {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'text/html',
      })
    : browser.post('/auth/email/verify', { token }, { accept: 'application/json' });
}

t.test('adding an address mails a verification link; opening it verifies without touching sessions', async (t) => {
  const { app, signIn, services, events, mails } = await buildWatched(t);
  const { browser, identityId } = await signIn({ username: 'ada' });
  const res = await browser.post('/auth/email/add', { email: 'Ada@Example.com' });
  t.equal(res.statusCode, 200);
  t.match(res.json(), { ok: true, email: 'ada@example.com', verified: false, sent: true, receipt: /^[0-9a-f]{64}$/ });
  const [mail] = await mails();
  t.match(mail, /^To: ada@example\.com\r$/m);
  const link = linkIn(mail!, '/auth/email/verify');
  t.ok(link);
  const added = events.find((e) => e.type === 'email.added');
  t.match(added, { identityId });
  t.notOk(JSON.stringify(events).includes('example.com'), 'events never carry the address');

  // Opened in another browser that has no session: verified, and still no session.
  const other = new Browser(app);
  const sessionsBefore = (await services.storage.sessions.listLive(identityId, services.now())).length;
  const opened = await other.get(new URL(link!).pathname + new URL(link!).search, { accept: 'text/html' });
  t.equal(opened.statusCode, 200);
  t.match(
    opened.body,
    /<form method="post" action="\/auth\/email\/verify" data-action="verify-email">/,
    'a GET shows a button',
  );
  t.same(
    (await services.storage.emails.listByIdentity(identityId)).map((e) => e.verifiedAt),
    [null],
    'a GET (a mail scanner) verifies nothing',
  );
  t.equal(
    (await other.get(new URL(link!).pathname + new URL(link!).search, { accept: 'text/html' })).statusCode,
    200,
    'nor uses the link up',
  );
  const page = await confirm(other, new URL(link!), true);
  t.equal(page.statusCode, 200);
  t.match(page.headers['content-type'], /^text\/html/);
  t.match(page.body, /Address verified/);
  t.match(page.headers['content-security-policy'], /script-src 'nonce-/);
  t.notOk(other.cookies.has('kp_session'), 'no session is created');
  t.equal(
    (await services.storage.sessions.listLive(identityId, services.now())).length,
    sessionsBefore,
    'no session is created or changed',
  );
  t.same(
    (await services.storage.emails.listByIdentity(identityId)).map((e) => e.verifiedAt !== null),
    [true],
  );
  t.ok(events.some((e) => e.type === 'email.verified' && e.identityId === identityId));

  const again = await confirm(other, new URL(link!));
  t.equal(again.statusCode, 410);
  t.equal(
    (await other.get(new URL(link!).pathname + new URL(link!).search, { accept: 'application/json' })).json().reason,
    'link_used',
    'the page says so too',
  );
  t.equal(again.json().reason, 'link_used');
});

t.test(
  "a GET from the account's own signed-in browser verifies at once; another account's session gets the button",
  async (t) => {
    const { signIn, services, mails, events } = await buildWatched(t);
    const { browser: ada, identityId } = await signIn({ username: 'ada' });
    const { browser: mallory } = await signIn({ username: 'mallory' });
    await ada.post('/auth/email/add', { email: 'ada@example.com' });
    await ada.post('/auth/email/add', { email: 'ada2@example.com' });
    const [first, second] = await mails();
    const firstLink = new URL(linkIn(first!, '/auth/email/verify')!);
    const secondLink = new URL(linkIn(second!, '/auth/email/verify')!);
    const verified = async () =>
      (await services.storage.emails.listByIdentity(identityId)).filter((e) => e.verifiedAt !== null).length;

    const elsewhere = await mallory.get(firstLink.pathname + firstLink.search, { accept: 'text/html' });
    t.match(elsewhere.body, /data-action="verify-email"/, "another account's session sees the button");
    t.equal(await verified(), 0, 'and verifies nothing');

    const own = await ada.get(firstLink.pathname + firstLink.search, { accept: 'text/html' });
    t.equal(own.statusCode, 200);
    t.match(own.body, /Address verified/);
    t.notMatch(own.body, /href="[^"]*token=[^"]*" hreflang/, 'no switcher link re-opens the spent link');
    t.match(
      own.body,
      '<a href="/account?lang=de" hreflang="de"',
      'the switcher goes to the account, not the spent link',
    );
    t.equal(await verified(), 1);
    const sessionCookie = ada.cookies.get('kp_session');
    t.ok(
      events.some((e) => e.type === 'email.verified' && e.identityId === identityId),
      'receipted',
    );
    const used = await ada.get(firstLink.pathname + firstLink.search, { accept: 'application/json' });
    t.equal(used.statusCode, 410, 'the link is used up');
    t.equal(used.json().reason, 'link_used');

    const json = await ada.get(secondLink.pathname + secondLink.search, { accept: 'application/json' });
    t.match(json.json(), { ok: true, verified: true, already: false, receipt: /^[0-9a-f]{64}$/ });
    t.equal(await verified(), 2);
    t.equal(ada.cookies.get('kp_session'), sessionCookie, 'the session is left as it was');
  },
);

t.test('verification answers JSON when asked, and refuses unknown or expired links clearly', async (t) => {
  const { signIn, mails, clock, app } = await buildWatched(t);
  const { browser } = await signIn({ username: 'bob' });
  await browser.post('/auth/email/add', { email: 'bob@example.com' });
  await browser.post('/auth/email/add', { email: 'bob2@example.com' });
  const [first, second] = await mails();
  const url = new URL(linkIn(first!, '/auth/email/verify')!);
  t.match((await new Browser(app).get(url.pathname + url.search, { accept: 'application/json' })).json(), {
    ok: true,
    verified: false,
    confirm: 'POST /auth/email/verify',
  });
  const json = await confirm(new Browser(app), url);
  t.equal(json.statusCode, 200);
  t.match(json.json(), { ok: true, verified: true, already: false, receipt: /^[0-9a-f]{64}$/ });

  const unknown = await new Browser(app).get('/auth/email/verify?token=' + 'A'.repeat(43), { accept: 'text/html' });
  t.equal(unknown.statusCode, 400);
  t.match(unknown.body, /This link does not work/);
  t.match(unknown.body, /link_invalid/);
  const missing = await new Browser(app).get('/auth/email/verify', { accept: 'application/json' });
  t.equal(missing.json().reason, 'link_invalid');

  clock.advance(86_400_000);
  const late = new URL(linkIn(second!, '/auth/email/verify')!);
  const expired = await new Browser(app).get(late.pathname + late.search, { accept: 'text/html' });
  t.equal(expired.statusCode, 410);
  t.match(expired.body, /expired/);
});

t.test('an address verified by one account cannot be verified by another', async (t) => {
  const { signIn, mails, app } = await buildWatched(t);
  const { browser: ada } = await signIn({ username: 'ada' });
  const { browser: mallory } = await signIn({ username: 'mallory' });
  await mallory.post('/auth/email/add', { email: 'shared@example.com' });
  await ada.post('/auth/email/add', { email: 'shared@example.com' });
  const [toMallory, toAda] = await mails();
  const adaLink = new URL(linkIn(toAda!, '/auth/email/verify')!);
  t.equal((await confirm(new Browser(app), adaLink)).statusCode, 200);
  const malloryLink = new URL(linkIn(toMallory!, '/auth/email/verify')!);
  const taken = await confirm(new Browser(app), malloryLink);
  t.equal(taken.statusCode, 409);
  t.equal(taken.json().reason, 'email_taken');
});

t.test('refuses adding without a session, a malformed address, and too many mails to one address', async (t) => {
  const { app, signIn, mails } = await buildWatched(t);
  t.equal((await new Browser(app).post('/auth/email/add', { email: 'x@example.com' })).statusCode, 401);
  const { browser } = await signIn({ username: 'cy' });
  for (const email of ['not-an-address', 'a b@example.com', 'x@localhost']) {
    const res = await browser.post('/auth/email/add', { email });
    t.equal(res.json().reason, 'invalid_email', email);
  }
  for (let i = 0; i < 5; i++)
    t.equal((await browser.post('/auth/email/add', { email: 'cy@example.com' })).statusCode, 200);
  const limited = await browser.post('/auth/email/add', { email: 'cy@example.com' });
  t.equal(limited.statusCode, 429);
  t.equal(limited.json().reason, 'rate_limited');
  t.equal((await mails()).length, 5);
});

t.test('re-adding a verified address sends nothing', async (t) => {
  const { signIn, mails, app } = await buildWatched(t);
  const { browser } = await signIn({ username: 'dee' });
  await browser.post('/auth/email/add', { email: 'dee@example.com' });
  const link = new URL(linkIn((await mails())[0]!, '/auth/email/verify')!);
  await confirm(new Browser(app), link);
  const again = await browser.post('/auth/email/add', { email: 'DEE@example.com' });
  t.match(again.json(), { ok: true, verified: true, sent: false });
  t.equal((await mails()).length, 1);
});

t.test('an account holds at most 10 addresses', async (t) => {
  const { signIn } = await buildWatched(t);
  const { browser } = await signIn({ username: 'many' });
  for (let i = 0; i < 10; i++)
    t.equal((await browser.post('/auth/email/add', { email: `a${i}@example.com` })).statusCode, 200);
  const over = await browser.post('/auth/email/add', { email: 'a10@example.com' });
  t.equal(over.statusCode, 409);
  t.equal(over.json().reason, 'too_many_emails');
  t.equal(
    (await browser.post('/auth/email/add', { email: 'a3@example.com' })).statusCode,
    200,
    'one it holds can be re-sent',
  );
});
