import t from 'tap';
import type { RunningServices } from '../../../control-plane/src/services.js';
import { MemorySharedState } from '#lib/runtime/shared-state/memory.js';
import { Browser } from '../../helpers/signed-in.js';
import { linkIn } from '../../helpers/smtp.js';
import { buildWatched } from '../../helpers/watched.js';

const ADMIN_TOKEN = 'a'.repeat(40);

function setup(t: { teardown(fn: () => unknown): void }) {
  return buildWatched(t, (clock) => ({ state: new MemorySharedState(clock.now), config: { adminToken: ADMIN_TOKEN } }));
}

async function verifiedEmail(
  services: RunningServices,
  identityId: string,
  email: string,
  verified = true,
): Promise<string> {
  const row = await services.storage.emails.add({
    emailId: `eml_${Math.random().toString(36).slice(2)}`,
    identityId,
    email,
    createdAt: services.now(),
    verifiedAt: null,
  });
  if (verified) await services.storage.emails.markVerified(row.emailId, services.now());
  return row.emailId;
}

function pathOf(link: string): string {
  const url = new URL(link);
  return url.pathname + url.search;
}

t.test(
  'mails a link to a verified address; the requesting browser signs in at email and lands on /account',
  async (t) => {
    const { app, signIn, services, events, mails } = await setup(t);
    const { identityId } = await signIn({ username: 'ada' });
    await verifiedEmail(services, identityId, 'ada@example.com');

    const browser = new Browser(app);
    const res = await browser.post('/auth/magic/request', { email: 'ADA@example.com' });
    t.equal(res.statusCode, 200);
    t.equal(res.json().ok, true);
    t.ok(browser.cookies.get('kp_device'), 'a requester without one gets a device cookie');
    const [mail] = await mails();
    t.match(mail, /^To: ada@example\.com\r$/m);
    const link = linkIn(mail!, '/auth/magic')!;
    t.match(link, /^http:\/\/localhost:4400\/auth\/magic\?token=[A-Za-z0-9_-]{43}/);
    t.match(
      events.find((e) => e.type === 'magic_link.sent'),
      { identityId },
    );

    const landing = await browser.get(pathOf(link), { accept: 'text/html' });
    t.equal(landing.statusCode, 303);
    t.equal(landing.headers.location, '/account');
    t.ok(browser.cookies.get('kp_session'));
    const sessions = await services.storage.sessions.listLive(identityId, services.now());
    const session = sessions.find((s) => s.assurance === 'email');
    t.ok(session, 'signed in at email');
    t.same(session!.amr, ['email']);
    t.match(
      events.find((e) => e.type === 'magic_link.redeemed'),
      { identityId, sessionId: session!.sessionId },
    );
    t.notOk(JSON.stringify(events).includes('example.com'), 'events never carry the address');
  },
);

t.test('answers the same for an unknown or unverified address, and mails nothing', async (t) => {
  const { app, signIn, services, mails } = await setup(t);
  const { identityId } = await signIn({ username: 'bob' });
  await verifiedEmail(services, identityId, 'bob@example.com');
  await verifiedEmail(services, identityId, 'unverified@example.com', false);
  const answers = [];
  for (const email of ['bob@example.com', 'nobody@example.com', 'unverified@example.com']) {
    const res = await new Browser(app).post('/auth/magic/request', { email });
    answers.push({
      status: res.statusCode,
      body: res.body,
      cookies: [res.headers['set-cookie']].flat().map((c) => String(c).split('=')[0]),
    });
  }
  t.same(answers[1], answers[0], 'unknown address: same status, body and cookie names');
  t.same(answers[2], answers[0], 'unverified address: same answer');
  const sent = await mails();
  t.equal(sent.length, 1, 'only the verified address got a mail');
  t.match(sent[0], /^To: bob@example\.com\r$/m);
});

t.test('a link works once', async (t) => {
  const { app, signIn, services, mails } = await setup(t);
  const { identityId } = await signIn({ username: 'cy' });
  await verifiedEmail(services, identityId, 'cy@example.com');
  const browser = new Browser(app);
  await browser.post('/auth/magic/request', { email: 'cy@example.com' });
  const link = linkIn((await mails())[0]!, '/auth/magic')!;
  t.equal((await browser.get(pathOf(link))).statusCode, 303);
  const reused = await browser.get(pathOf(link), { accept: 'text/html' });
  t.equal(reused.statusCode, 410);
  t.match(reused.headers['content-type'], /^text\/html/);
  t.match(reused.body, /This link was used already/);
  t.match(reused.body, /<code>link_used<\/code>/);
  const json = await browser.get(pathOf(link), { accept: 'application/json' });
  t.equal(json.json().reason, 'link_used');
});

t.test('another device is refused with a clear page and the link stays usable where it was asked for', async (t) => {
  const { app, signIn, services, mails } = await setup(t);
  const { identityId } = await signIn({ username: 'dee' });
  await verifiedEmail(services, identityId, 'dee@example.com');
  const laptop = new Browser(app);
  await laptop.post('/auth/magic/request', { email: 'dee@example.com', project: 'Demo <b>App</b>' });
  const link = linkIn((await mails())[0]!, '/auth/magic')!;

  const phone = new Browser(app);
  await phone.get('/auth/magic?token=' + 'A'.repeat(43)); // any visit; the phone has its own (or no) device cookie
  const refused = await phone.get(pathOf(link), { accept: 'text/html' });
  t.equal(refused.statusCode, 403);
  t.match(refused.body, /Open this link in the browser that asked for it/);
  t.match(refused.body, /Demo &lt;b&gt;App&lt;\/b&gt;/, 'the project is shown as escaped plain text');
  t.notMatch(refused.body, /<b>App<\/b>/);
  t.notOk(phone.cookies.has('kp_session'));

  const stranger = new Browser(app);
  stranger.cookies.set('kp_device', 'B'.repeat(43));
  t.equal((await stranger.get(pathOf(link), { accept: 'application/json' })).json().reason, 'link_wrong_device');

  t.equal((await laptop.get(pathOf(link))).statusCode, 303, 'still works on the requesting device');
});

t.test('an expired link is refused with its reason', async (t) => {
  const { app, signIn, services, mails, clock } = await setup(t);
  const { identityId } = await signIn({ username: 'eve' });
  await verifiedEmail(services, identityId, 'eve@example.com');
  const browser = new Browser(app);
  await browser.post('/auth/magic/request', { email: 'eve@example.com' });
  const link = linkIn((await mails())[0]!, '/auth/magic')!;
  clock.advance(600_000);
  const late = await browser.get(pathOf(link), { accept: 'text/html' });
  t.equal(late.statusCode, 410);
  t.match(late.body, /This link has expired/);
  const unknown = await browser.get('/auth/magic?token=nope', { accept: 'text/html' });
  t.equal(unknown.statusCode, 400);
  t.match(unknown.body, /link_invalid/);
});

t.test('at most 5 links per address per hour; over the limit the answer is the same and nothing is sent', async (t) => {
  const { app, signIn, services, mails, clock } = await setup(t);
  const { identityId } = await signIn({ username: 'fay' });
  await verifiedEmail(services, identityId, 'fay@example.com');
  const browser = new Browser(app);
  const bodies = new Set<string>();
  for (let i = 0; i < 7; i++) {
    const res = await browser.post('/auth/magic/request', { email: 'fay@example.com' });
    t.equal(res.statusCode, 200);
    bodies.add(res.body);
  }
  t.equal(bodies.size, 1, 'one answer throughout');
  t.equal((await mails()).length, 5);
  clock.advance(3_600_000);
  await browser.post('/auth/magic/request', { email: 'fay@example.com' });
  t.equal((await mails()).length, 6, 'the next hour sends again');
});

t.test('validates return: same-origin paths only; a bad one is refused and leaves the link unused', async (t) => {
  const { app, signIn, services, mails } = await setup(t);
  const { identityId } = await signIn({ username: 'gus' });
  await verifiedEmail(services, identityId, 'gus@example.com');
  const browser = new Browser(app);
  const refused = await browser.post('/auth/magic/request', {
    email: 'gus@example.com',
    return: 'https://evil.example/steal',
  });
  t.equal(refused.statusCode, 400);
  t.equal(refused.json().reason, 'invalid_return');

  await browser.post('/auth/magic/request', { email: 'gus@example.com', return: '/account?tab=emails' });
  const link = linkIn((await mails())[0]!, '/auth/magic')!;
  t.equal(new URL(link).searchParams.get('return'), '/account?tab=emails');

  const tampered = new URL(link);
  tampered.searchParams.set('return', '//evil.example/');
  const bad = await browser.get(tampered.pathname + tampered.search, { accept: 'text/html' });
  t.equal(bad.statusCode, 400);
  t.match(bad.body, /invalid_return/);

  const good = await browser.get(pathOf(link));
  t.equal(good.statusCode, 303);
  t.equal(good.headers.location, '/account?tab=emails');
});

t.test(
  'return may be a redirect URI a relying party registered, matched exactly, and is then a link, not a redirect',
  async (t) => {
    const { app, signIn, services, mails } = await setup(t);
    const { identityId } = await signIn({ username: 'hal' });
    await verifiedEmail(services, identityId, 'hal@example.com');
    const registered = await app.inject({
      method: 'POST',
      url: '/register',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { redirect_uris: ['https://app.example.com/welcome'], token_endpoint_auth_method: 'none' },
    });
    t.equal(registered.statusCode, 201, registered.body);
    const browser = new Browser(app);
    for (const nearMiss of [
      'https://app.example.com/welcome/',
      'https://app.example.com/Welcome',
      'https://app.example.com/welcome?x=1',
      'https://app.example.com.evil.example/welcome',
    ]) {
      t.equal(
        (await browser.post('/auth/magic/request', { email: 'hal@example.com', return: nearMiss })).json().reason,
        'invalid_return',
        nearMiss,
      );
    }
    await browser.post('/auth/magic/request', { email: 'hal@example.com', return: 'https://app.example.com/welcome' });
    const link = linkIn((await mails())[0]!, '/auth/magic')!;
    const done = await browser.get(pathOf(link), { accept: 'text/html' });
    t.equal(done.statusCode, 200, 'signed in, but never redirected to a URI the link cannot prove');
    t.notOk(done.headers.location);
    t.match(
      done.body,
      /<a href="https:\/\/app\.example\.com\/welcome" data-action="continue"/,
      'a link the user may follow',
    );
    t.ok(browser.cookies.get('kp_session'));

    // The language switcher of the page the link opened never opens the spent link again.
    const german = /<a href="([^"]+)" hreflang="de"/.exec(done.body)![1]!.replaceAll('&amp;', '&');
    t.notMatch(german, /token=/);
    t.equal(german, '/account?lang=de');
    const switched = await browser.get(german, { accept: 'text/html' });
    t.equal(switched.statusCode, 200, 'the account page, signed in, in German');
    t.match(switched.body, '<html lang="de"');
  },
);

t.test('a refused link page switches language on its way-on page, not on the link', async (t) => {
  const { app } = await setup(t);
  const browser = new Browser(app);
  const refused = await browser.get('/auth/magic?token=' + 'A'.repeat(43) + '&project=Demo', { accept: 'text/html' });
  t.equal(refused.statusCode, 400);
  const french = /<a href="([^"]+)" hreflang="fr"/.exec(refused.body)![1]!.replaceAll('&amp;', '&');
  t.equal(french, '/auth/magic/request?project=Demo&lang=fr');
  const page = await browser.get(french, { accept: 'text/html' });
  t.equal(page.statusCode, 200);
  t.match(page.body, '<html lang="fr"');
});

t.test('a live stronger session of the same account is kept, not downgraded, under a new token', async (t) => {
  const { app, signIn, services, mails } = await setup(t);
  const { browser, identityId } = await signIn({ username: 'hal' });
  await verifiedEmail(services, identityId, 'hal@example.com');
  const before = browser.cookies.get('kp_session')!;
  const [session] = await services.storage.sessions.listLive(identityId, services.now());
  await browser.post('/auth/magic/request', { email: 'hal@example.com' });
  const link = linkIn((await mails())[0]!, '/auth/magic')!;
  t.equal((await browser.get(pathOf(link))).statusCode, 303);
  t.not(browser.cookies.get('kp_session'), before, 'a link is an authentication: a new session token');
  const live = await services.storage.sessions.listLive(identityId, services.now());
  t.same(
    live.map((s) => [s.sessionId, s.assurance, s.authTime, s.amr]),
    [[session!.sessionId, 'passkey', session!.authTime, session!.amr]],
    'the same passkey session, its level and auth_time as they were',
  );
  const stale = await app.inject({
    method: 'GET',
    url: '/account?format=json',
    headers: { cookie: `kp_session=${before}` },
  });
  t.equal(stale.statusCode, 401, 'the token from before the link is refused');
});

t.test(
  'dryRun: own verified address with a session; any address for an operator in the console at sensitive, receipted',
  async (t) => {
    const { app, signIn, services, mails, events } = await setup(t);
    const { browser: ivy, identityId: ivyId } = await signIn({ username: 'ivy' });
    await verifiedEmail(services, ivyId, 'ivy@example.com');

    t.equal(
      (await new Browser(app).post('/auth/magic/request', { email: 'ivy@example.com', dryRun: true })).json().reason,
      'unauthorized',
    );

    const own = await ivy.post('/auth/magic/request', { email: 'ivy@example.com', dryRun: true });
    t.equal(own.statusCode, 200);
    t.match(own.json(), { ok: true, dryRun: true });
    t.match(own.json().link, /^http:\/\/localhost:4400\/auth\/magic\?token=/);
    t.equal((await mails()).length, 0, 'a dry run sends nothing');
    t.equal((await ivy.get(pathOf(own.json().link))).statusCode, 303, "the link works on the session's device");

    const { browser: founder, identityId: founderId } = await signIn({ username: 'root', console: 'operator' });
    const notOwn = await ivy.post('/auth/magic/request', { email: 'root@example.com', dryRun: 'yes' });
    t.equal(notOwn.statusCode, 403);
    t.equal(notOwn.json().reason, 'forbidden');
    t.equal(
      (await founder.post('/auth/magic/request', { email: 'ivy@example.com', dryRun: 1 })).statusCode,
      403,
      'the operator needs sensitive',
    );

    const { browser: stepped } = await signIn({ username: 'root', assurance: 'sensitive', console: 'operator' });
    const any = await stepped.post('/auth/magic/request', { email: 'ivy@example.com', dryRun: true });
    t.equal(any.statusCode, 200);
    t.match(any.json(), { ok: true, dryRun: true, receipt: /^[0-9a-f]{64}$/ });
    t.match(
      events.find((e) => e.type === 'magic_link.dry_run' && e.founder),
      { identityId: ivyId, actorIdentityId: founderId },
    );
    t.equal(
      (await stepped.post('/auth/magic/request', { email: 'nobody@example.com', dryRun: true })).json().reason,
      'not_found',
    );
    t.equal((await mails()).length, 0);

    const notDry = await ivy.post('/auth/magic/request', { email: 'ivy@example.com', dryRun: false });
    t.notOk(notDry.json().link, 'dryRun false is a real request');
    t.equal((await mails()).length, 1);
  },
);

t.test('refuses malformed requests', async (t) => {
  const { app } = await setup(t);
  const b = new Browser(app);
  t.equal((await b.post('/auth/magic/request', { email: 'nope' })).json().reason, 'invalid_email');
  t.equal((await b.post('/auth/magic/request', {})).json().reason, 'invalid_request');
  t.equal(
    (await b.post('/auth/magic/request', { email: 'a@example.com', project: 'x'.repeat(201) })).json().reason,
    'invalid_request',
  );
  t.equal(
    (await b.post('/auth/magic/request', { email: 'a@example.com' }, { origin: 'https://evil.example' })).json().reason,
    'origin_mismatch',
  );
});

t.test('works as a plain HTML form without JavaScript, carrying return and project', async (t) => {
  const { app, signIn, services, mails } = await setup(t);
  const { identityId } = await signIn({ username: 'nojs' });
  await verifiedEmail(services, identityId, 'nojs@example.com');
  const browser = new Browser(app);
  const page = await browser.get('/auth/magic/request?return=%2Faccount%3Ftab%3D1&project=Demo', {
    accept: 'text/html',
  });
  t.equal(page.statusCode, 200);
  t.match(page.body, /<form method="post" action="\/auth\/magic\/request">/);
  t.match(page.body, /<input type="hidden" name="return" value="\/account\?tab=1">/);
  t.match(page.body, /<strong>Demo<\/strong>/);
  const evil = await browser.get('/auth/magic/request?return=https%3A%2F%2Fevil.example%2F', { accept: 'text/html' });
  t.notMatch(evil.body, /evil\.example/, 'a foreign return is dropped from the form');

  const html = { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' };
  const bad = await browser.post('/auth/magic/request', 'email=nope', html);
  t.equal(bad.statusCode, 400);
  t.match(bad.body, /role="alert"/);
  t.match(bad.body, /id="magic-email"[^>]* aria-invalid="true" aria-describedby="form-error" autofocus>/);
  const sent = await browser.post(
    '/auth/magic/request',
    'email=nojs%40example.com&return=%2Faccount%3Ftab%3D1&project=Demo',
    html,
  );
  t.equal(sent.statusCode, 200);
  t.match(sent.body, /Check your mail/);
  const unknown = await new Browser(app).post('/auth/magic/request', 'email=ghost%40example.com', html);
  t.equal(
    unknown.body.replace(/nonce="[^"]+"/g, ''),
    sent.body.replace(/nonce="[^"]+"/g, ''),
    'the same page for an unknown address',
  );
  const link = linkIn((await mails())[0]!, '/auth/magic')!;
  const landed = await browser.get(pathOf(link));
  t.equal(landed.headers.location, '/account?tab=1');

  const again = await browser.get(pathOf(link), { accept: 'text/html' });
  t.match(
    again.body,
    /href="\/auth\/magic\/request\?return=%2Faccount%3Ftab%3D1&amp;project=Demo"/,
    'the refusal offers a new link for the same place',
  );
});

t.test('a HEAD request never consumes a link', async (t) => {
  const { app, signIn, services, mails } = await setup(t);
  const { identityId } = await signIn({ username: 'head' });
  await verifiedEmail(services, identityId, 'head@example.com');
  const browser = new Browser(app);
  await browser.post('/auth/magic/request', { email: 'head@example.com' });
  const link = linkIn((await mails())[0]!, '/auth/magic')!;
  const head = await app.inject({ method: 'HEAD', url: pathOf(link), headers: { cookie: browser.header() } });
  t.not(head.statusCode, 303);
  t.equal((await browser.get(pathOf(link))).statusCode, 303, 'the link still works');
});
