import t, { type Test } from 'tap';
import { LOCALES } from '#lib/i18n/locales.js';
import { translatorFor } from '#lib/i18n/translate.js';
import { buildWatched } from '../../helpers/watched.js';
import { ORIGIN } from '../../helpers/signed-in.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import { linkIn } from '../../helpers/smtp.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const DAY = 86_400_000;
const ADMIN = 'test-admin-token-0123456789abcdef';

async function setUp(t: Test) {
  const built = await buildWatched(t, () => ({
    areas: ['orgs', 'scim', 'account', 'passkeys'],
    config: { adminToken: ADMIN },
  }));
  const { app, services, clock } = built;
  const owner = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  t.equal((await owner.browser.post('/auth/orgs/create', { name: 'Acme' })).statusCode, 200);
  const { token } = (await owner.browser.post('/org/acme/scim-tokens')).json() as { token: string };
  const org = (await services.storage.orgs.getBySlug('acme'))!;
  // A proved mail domain, as POST /org/acme/mail-domains/…/verify leaves it.
  await services.storage.orgs.addMailDomain({
    domainId: 'mdm_1',
    orgId: org.orgId,
    domain: 'acme.example',
    proofToken: 'x',
    verifiedAt: null,
    checkedAt: null,
    failingSince: null,
    createdAt: clock.now(),
  });
  await services.storage.orgs.claimMailDomain('mdm_1', clock.now());
  const scim = (method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown) =>
    app.inject({
      method,
      url: `/scim/v2/orgs/acme${path}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const provision = async (userName: string, more: Record<string, unknown> = {}) => {
    const res = await scim('POST', '/Users', { schemas: [USER], userName, ...more });
    t.equal(res.statusCode, 201, res.body);
    return (res.json() as { id: string }).id;
  };
  /** The enrolment link mailed to `address`, if one was. */
  const linkFor = async (address: string) => {
    const mail = (await built.mails()).find((m) => m.includes(`To: ${address}`));
    return mail ? linkIn(mail, '/auth/enrol') : null;
  };
  const post = (url: string, payload: unknown, cookie = '') =>
    app.inject({
      method: 'POST',
      url,
      headers: { origin: ORIGIN, 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
      payload: JSON.stringify(payload),
    });
  /** The ceremony the page's script runs, with a software authenticator. */
  const enrol = async (token: string) => {
    const begin = await post('/auth/enrol/options', { token });
    if (begin.statusCode !== 200) return begin;
    const response = new SoftAuthenticator(ORIGIN).create(begin.json().options);
    return post('/auth/enrol/verify', { token, response });
  };
  /** Every enrolment link mailed to `address`, oldest first. */
  const linksFor = async (address: string) =>
    (await built.mails())
      .filter((m) => m.includes(`To: ${address}`))
      .map((m) => linkIn(m, '/auth/enrol'))
      .filter((l): l is string => l !== null);
  const resend = (id: string, browser = owner.browser) => browser.post(`/org/acme/members/${id}/enrolment-link`);
  return { ...built, org, owner, scim, provision, linkFor, linksFor, resend, enrol, post };
}

const tokenOf = (link: string) => new URL(link).searchParams.get('token')!;

t.test(
  'a provisioned account with a verified address is mailed a link that creates its passkey and signs it in',
  async (t) => {
    const { app, provision, linkFor, enrol, events, services, org, mails } = await setUp(t);
    const id = await provision('ann@acme.example', {
      emails: [{ type: 'work', value: 'ann@acme.example', primary: true }],
      preferredLanguage: 'de',
    });
    const mail = (await mails()).find((m) => m.includes('To: ann@acme.example'));
    t.match(mail, /Subject: .*Passkey/, 'in the language the directory names (preferredLanguage)');
    t.match(mail, /Acme/, 'names the org');
    const link = await linkFor('ann@acme.example');
    t.ok(link, 'the mail carries the link');
    t.match(
      events.find((e) => e.type === 'scim.enrolment_sent'),
      {
        orgId: org.orgId,
        identityId: id,
        actor: { type: 'scim_token' },
      },
    );
    t.notMatch(JSON.stringify(events.filter((e) => e.type.startsWith('scim.'))), /ann@acme/, 'no address in receipts');

    const page = await app.inject({ method: 'GET', url: new URL(link!).pathname + new URL(link!).search });
    t.equal(page.statusCode, 200, page.body);
    t.match(page.body, /data-action="enrol"/);
    t.match(page.body, /Acme/);
    t.equal(
      (await app.inject({ method: 'GET', url: new URL(link!).pathname + new URL(link!).search })).statusCode,
      200,
      'opening it uses nothing up',
    );

    const done = await enrol(tokenOf(link!));
    t.equal(done.statusCode, 200, done.body);
    t.match(done.json(), { ok: true, identityId: id, home: '/account', receipt: /^[0-9a-f]{64}$/ });
    t.match(String(done.headers['set-cookie']), /kp_session=/, 'signed in');
    t.equal((await services.storage.credentials.listByIdentity(id)).length, 1, 'the passkey is stored');
    t.match(
      events.find((e) => e.type === 'scim.enrolment_used'),
      { orgId: org.orgId, identityId: id },
    );
    t.ok(
      events.some((e) => e.type === 'session.started' && e.identityId === id),
      'a session of the provisioned account started',
    );

    const again = await enrol(tokenOf(link!));
    t.equal(again.statusCode, 410);
    t.equal(again.json().reason, 'link_used', 'one use');
    const usedPage = await app.inject({
      method: 'GET',
      url: new URL(link!).pathname + new URL(link!).search,
      headers: { accept: 'text/html' },
    });
    t.equal(usedPage.statusCode, 410);
    t.match(usedPage.body, /link_used/);
  },
);

t.test(
  'no link for an address outside the proved domains, an inactive user, or an org with a connection',
  async (t) => {
    const { provision, linkFor, events, services, org, clock } = await setUp(t);
    await provision('bo@elsewhere.example', { emails: [{ type: 'work', value: 'bo@elsewhere.example' }] });
    await provision('cy@acme.example', { emails: [{ type: 'work', value: 'cy@acme.example' }], active: false });
    await provision('no-mail@acme.example');
    await services.storage.connections.insert({
      connectionId: 'con_1',
      orgId: org.orgId,
      type: 'oidc',
      name: 'Acme SSO',
      settings: {
        issuer: 'https://login.acme.example',
        clientId: 'kp',
        tokenEndpointAuthMethod: 'client_secret_basic',
        scopes: ['openid'],
      },
      secretSealed: null,
      domains: ['acme.example'],
      jit: null,
      required: false,
      maxAssurance: 'email',
      sessionMaxHours: 12,
      createdAt: clock.now(),
      updatedAt: clock.now(),
    });
    await provision('di@acme.example', { emails: [{ type: 'work', value: 'di@acme.example' }] });
    for (const address of ['bo@elsewhere.example', 'cy@acme.example', 'di@acme.example'])
      t.equal(await linkFor(address), null, `${address} is not mailed`);
    t.equal(events.filter((e) => e.type === 'scim.enrolment_sent').length, 0);
  },
);

t.test(
  "the org's passkey policy holds for the link: a denied authenticator is refused and the link stays usable",
  async (t) => {
    const DENIED = 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4';
    const OTHER = '6d44ba9b-f6ec-2e49-b930-0c8fe920cb73';
    const { provision, linkFor, post, services, owner } = await setUp(t);
    const put = await owner.browser.request('PUT', '/org/acme/passkey-policy', { aaguids_denied: [DENIED] });
    t.equal(put.statusCode, 200, put.body);
    const id = await provision('eve@acme.example', { emails: [{ type: 'work', value: 'eve@acme.example' }] });
    const token = tokenOf((await linkFor('eve@acme.example'))!);
    const attempt = async (aaguid: string) => {
      const begin = await post('/auth/enrol/options', { token });
      t.equal(begin.statusCode, 200, begin.body);
      const response = new SoftAuthenticator(ORIGIN).create(begin.json().options, { aaguid });
      return post('/auth/enrol/verify', { token, response });
    };
    const refused = await attempt(DENIED);
    t.equal(refused.statusCode, 403);
    t.match(refused.json(), {
      reason: 'authenticator_not_allowed',
      why: 'denied',
      authenticator: { aaguid: DENIED, name: 'Google Password Manager' },
    });
    t.equal(refused.headers['set-cookie'], undefined, 'no session');
    t.same(await services.storage.credentials.listByIdentity(id), [], 'no passkey stored');

    const enrolled = await attempt(OTHER);
    t.equal(enrolled.statusCode, 200, 'the link was not used up by the refusal');
    t.match(await services.storage.credentials.listByIdentity(id), [{ aaguid: OTHER, attested: false }]);

    // A policy that requires attestation asks the authenticator for it (docs/passkeys.md#org-policy).
    t.equal(
      (await owner.browser.request('PUT', '/org/acme/passkey-policy', { attestation: 'required' })).statusCode,
      200,
    );
    await provision('fay@acme.example', { emails: [{ type: 'work', value: 'fay@acme.example' }] });
    const fay = tokenOf((await linkFor('fay@acme.example'))!);
    const options = (await post('/auth/enrol/options', { token: fay })).json().options;
    t.equal(options.attestation, 'direct');
    const unattested = await post('/auth/enrol/verify', {
      token: fay,
      response: new SoftAuthenticator(ORIGIN).create(options, { aaguid: OTHER }),
    });
    t.match(unattested.json(), { reason: 'authenticator_not_allowed', why: 'attestation_required' });
  },
);

t.test('an expired link, or one of a suspended account, is refused and stays unused', async (t) => {
  const { app, scim, provision, linkFor, enrol, clock } = await setUp(t);
  const ann = await provision('ann@acme.example', { emails: [{ type: 'work', value: 'ann@acme.example' }] });
  await provision('bea@acme.example', { emails: [{ type: 'work', value: 'bea@acme.example' }] });
  const annToken = tokenOf((await linkFor('ann@acme.example'))!);
  const beaToken = tokenOf((await linkFor('bea@acme.example'))!);

  const off = await scim('PATCH', `/Users/${ann}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'replace', value: { active: 'False' } }],
  });
  t.equal(off.statusCode, 200, off.body);
  const suspended = await enrol(annToken);
  t.equal(suspended.statusCode, 403);
  t.equal(suspended.json().reason, 'account_suspended');
  // The languages: the refusal page says it in each, with the reason code for support.
  for (const locale of LOCALES) {
    const page = await app.inject({
      method: 'GET',
      url: `/auth/enrol?token=${annToken}&lang=${locale}`,
      headers: { accept: 'text/html' },
    });
    t.equal(page.statusCode, 403, locale);
    t.match(page.body, translatorFor(locale).t('link.suspended.heading'), `${locale}: the heading`);
    t.match(page.body, /account_suspended/);
  }
  await scim('PATCH', `/Users/${ann}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'replace', path: 'active', value: true }],
  });
  const begin = await app.inject({
    method: 'POST',
    url: '/auth/enrol/options',
    headers: { origin: ORIGIN },
    payload: { token: annToken },
  });
  t.equal(begin.statusCode, 200, 'lifting the suspension lets the unused link work again');

  clock.advance(7 * DAY + 1);
  const expired = await enrol(beaToken);
  t.equal(expired.statusCode, 410);
  t.equal(expired.json().reason, 'link_expired');
  for (const locale of LOCALES) {
    const page = await app.inject({
      method: 'GET',
      url: `/auth/enrol?token=${beaToken}&lang=${locale}`,
      headers: { accept: 'text/html' },
    });
    t.equal(page.statusCode, 410, locale);
    t.match(page.body, translatorFor(locale).t('link.expired.heading'), `${locale}: the heading`);
  }
  const unknown = await enrol('A'.repeat(43));
  t.equal(unknown.json().reason, 'link_invalid');
});

t.test('two uses of one link at once: exactly one creates a passkey', async (t) => {
  const { provision, linkFor, services, post } = await setUp(t);
  const id = await provision('ann@acme.example', { emails: [{ type: 'work', value: 'ann@acme.example' }] });
  const token = tokenOf((await linkFor('ann@acme.example'))!);
  const responses = [];
  for (let i = 0; i < 2; i++) {
    const begin = await post('/auth/enrol/options', { token });
    responses.push(new SoftAuthenticator(ORIGIN).create(begin.json().options));
  }
  const answers = await Promise.all(responses.map((response) => post('/auth/enrol/verify', { token, response })));
  t.same(answers.map((a) => a.statusCode).sort(), [200, 410], answers.map((a) => a.body).join(' | '));
  t.equal((await services.storage.credentials.listByIdentity(id)).length, 1);
});

t.test(
  'an org admin sends a new link once the first expired: the old link stops working, the new one enrols',
  async (t) => {
    const { provision, linksFor, resend, enrol, events, clock, org, owner, services, signIn } = await setUp(t);
    const id = await provision('ann@acme.example', { emails: [{ type: 'work', value: 'ann@acme.example' }] });
    const [first] = await linksFor('ann@acme.example');
    clock.advance(7 * DAY + 1);
    t.equal((await enrol(tokenOf(first!))).json().reason, 'link_expired');

    const { browser } = await signIn({ username: 'olivia' }); // a week later: a new session
    const sent = await resend(id, browser);
    t.equal(sent.statusCode, 200, sent.body);
    t.match(sent.json(), {
      ok: true,
      expiresAt: new Date(clock.now() + 7 * DAY).toISOString(),
      receipt: /^[0-9a-f]{64}$/,
    });
    t.match(events.filter((e) => e.type === 'scim.enrolment_sent').at(-1), {
      orgId: org.orgId,
      identityId: id,
      actor: { type: 'person', id: owner.identityId },
      resent: true,
      replaced: 1,
    });
    const links = await linksFor('ann@acme.example');
    t.equal(links.length, 2, 'a second mail with a new link');
    t.not(links[1], links[0]);
    t.equal((await enrol(tokenOf(links[0]!))).json().reason, 'link_invalid', 'the old link no longer exists');
    const done = await enrol(tokenOf(links[1]!));
    t.equal(done.statusCode, 200, done.body);
    t.equal((await services.storage.credentials.listByIdentity(id)).length, 1);
    const after = await resend(id, browser);
    t.equal(after.statusCode, 409);
    t.match(after.json(), { reason: 'enrolment_unavailable', why: 'passkey_enrolled' }, 'not once a passkey exists');
  },
);

t.test('a new link also replaces a live one (a mail gone astray), at most three an hour per account', async (t) => {
  const { provision, linksFor, resend, post } = await setUp(t);
  const id = await provision('ann@acme.example', { emails: [{ type: 'work', value: 'ann@acme.example' }] });
  for (let i = 0; i < 3; i++) t.equal((await resend(id)).statusCode, 200);
  const limited = await resend(id);
  t.equal(limited.statusCode, 429);
  t.equal(limited.json().reason, 'rate_limited');
  t.ok(Number(limited.headers['retry-after']) > 0, 'Retry-After');
  const links = await linksFor('ann@acme.example');
  t.equal(links.length, 4, 'the provisioning mail and three new ones');
  // Mails written in one millisecond have no order: whichever link still opens, exactly one does.
  const opened = [];
  for (const link of links)
    opened.push((await post('/auth/enrol/options', { token: tokenOf(link) })).json().reason ?? 'opens');
  t.same(opened.sort(), ['link_invalid', 'link_invalid', 'link_invalid', 'opens'], 'only the newest link works');
  const bea = await provision('bea@acme.example', { emails: [{ type: 'work', value: 'bea@acme.example' }] });
  t.equal((await resend(bea)).statusCode, 200, 'the limit is per account');
});

t.test('refusals: a plain member, a personal account, a suspended account, no verified address', async (t) => {
  const { app, provision, resend, scim, signIn, owner } = await setUp(t);
  const ann = await provision('ann@acme.example', { emails: [{ type: 'work', value: 'ann@acme.example' }] });
  const mia = await signIn({ username: 'mia' });
  t.equal((await owner.browser.post('/org/acme/members/invite', { username: 'mia' })).statusCode, 200);
  t.equal((await mia.browser.post('/org/acme/members/accept', {})).statusCode, 200);

  const member = await resend(ann, mia.browser);
  t.equal(member.statusCode, 403);
  t.equal(member.json().reason, 'forbidden', 'a plain member may not');
  const personal = await resend(mia.identityId);
  t.equal(personal.statusCode, 404);
  t.equal(personal.json().reason, 'not_found', 'a personal member is never mailed by the org');
  t.equal((await resend('usr_nobody')).json().reason, 'not_found');

  const away = await provision('bo@elsewhere.example', { emails: [{ type: 'work', value: 'bo@elsewhere.example' }] });
  const unverified = await resend(away);
  t.equal(unverified.statusCode, 409);
  t.match(unverified.json(), { reason: 'enrolment_unavailable', why: 'no_verified_address' });

  await scim('PATCH', `/Users/${ann}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'replace', path: 'active', value: false }],
  });
  const suspended = await resend(ann);
  t.equal(suspended.statusCode, 403);
  t.equal(suspended.json().reason, 'account_suspended');
  const stranger = await app.inject({ method: 'POST', url: `/org/acme/members/${ann}/enrolment-link` });
  t.equal(stranger.statusCode, 401, 'no session');
});

t.test('an account the directory turns active again, still without a passkey, is mailed a new link', async (t) => {
  const { provision, linksFor, scim, enrol, clock, events } = await setUp(t);
  const id = await provision('ann@acme.example', { emails: [{ type: 'work', value: 'ann@acme.example' }] });
  const off = (active: boolean) =>
    scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'active', value: active }],
    });
  t.equal((await off(false)).statusCode, 200);
  t.equal((await off(true)).statusCode, 200);
  t.equal((await linksFor('ann@acme.example')).length, 1, 'the first link still works: no second one');
  t.equal((await off(false)).statusCode, 200);
  clock.advance(7 * DAY + 1);
  t.equal((await off(true)).statusCode, 200);
  const links = await linksFor('ann@acme.example');
  t.equal(links.length, 2, 'its link had expired: a new one');
  t.match(events.filter((e) => e.type === 'scim.enrolment_sent').at(-1), {
    actor: { type: 'scim_token' },
    resent: true,
    replaced: 1,
  });
  t.equal((await enrol(tokenOf(links[1]!))).statusCode, 200);
});

t.test('the org page shows a managed account without a passkey and its form sends a new link', async (t) => {
  const { provision, owner, linksFor, clock, signIn } = await setUp(t);
  const id = await provision('ann@acme.example', { emails: [{ type: 'work', value: 'ann@acme.example' }] });
  let browser = owner.browser;
  const page = async () => (await browser.get('/org/acme', { accept: 'text/html' })).body;
  t.match(await page(), new RegExp(`data-member="${id}"[^]*?data-enrolment="live"`));
  clock.advance(7 * DAY + 1);
  browser = (await signIn({ username: 'olivia' })).browser;
  const stale = await page();
  t.match(stale, new RegExp(`data-member="${id}"[^]*?data-enrolment="none"`));
  t.match(stale, /action="\/org\/acme\/members\/enrolment-link"[^]*?data-action="send-enrolment"/);
  const form = await browser.request('POST', '/org/acme/members/enrolment-link', `user=${id}`, {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'text/html',
  });
  t.equal(form.statusCode, 303, form.body);
  t.equal((await linksFor('ann@acme.example')).length, 2);
  t.match(await page(), new RegExp(`data-member="${id}"[^]*?data-enrolment="live"`));
});

t.test("the operator's admin token sends a new link for any org, as an owner would", async (t) => {
  const { app, provision, linksFor, events } = await setUp(t);
  const id = await provision('ann@acme.example', { emails: [{ type: 'work', value: 'ann@acme.example' }] });
  const res = await app.inject({
    method: 'POST',
    url: `/org/acme/members/${id}/enrolment-link`,
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  t.equal(res.statusCode, 200, res.body);
  t.equal((await linksFor('ann@acme.example')).length, 2);
  t.match(events.filter((e) => e.type === 'scim.enrolment_sent').at(-1), {
    actor: { type: 'admin_token' },
    resent: true,
  });
});
