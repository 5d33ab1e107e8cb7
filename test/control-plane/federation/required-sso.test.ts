import t, { type Test } from 'tap';
import { MemorySharedState } from '#lib/runtime/shared-state/memory.js';
import { regenerateRecoveryCodes } from '../../../control-plane/src/recovery/codes.js';
import type { RunningServices } from '../../../control-plane/src/services.js';
import { seedProvedMailDomain } from '../../helpers/mail-domains.js';
import { ADMIN } from '../../helpers/oidc.js';
import { TEST_ISSUER } from '../../helpers/build.js';
import { Browser } from '../../helpers/signed-in.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import { linkIn } from '../../helpers/smtp.js';
import { startUpstreamOidc, type UpstreamOidc } from '../../helpers/upstream-oidc.js';
import { buildWatched } from '../../helpers/watched.js';

/**
 * Required SSO (docs/federation.md#required-sso): for the accounts an org with a `required`
 * connection manages, magic links and backup codes are `sso_required`, a passkey only steps up a
 * session an upstream sign-in started, and sessions end within the connection's cap; accounts the
 * org does not manage are untouched. Connections are added against node-oidc-provider.
 */
const admin = { authorization: `Bearer ${ADMIN}` };
const HOUR = 3_600_000;

let upstream: UpstreamOidc;
t.before(async () => {
  upstream = await startUpstreamOidc(t);
});

async function verifiedEmail(services: RunningServices, identityId: string, email: string): Promise<void> {
  const row = await services.storage.emails.add({
    emailId: `eml_${email.replace(/[^a-z]/g, '')}`,
    identityId,
    email,
    createdAt: services.now(),
    verifiedAt: null,
  });
  await services.storage.emails.markVerified(row.emailId, services.now());
}

async function setUp(t: Test) {
  const built = await buildWatched(t, (clock) => ({
    state: new MemorySharedState(clock.now),
    config: { adminToken: ADMIN, 'fetch.allowPrivateTargets': true, 'fetch.caFile': upstream.tls.caFile },
  }));
  const { app, services } = built;
  const owner = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  t.equal((await owner.browser.post('/auth/orgs/create', { name: 'Acme' })).statusCode, 200);
  const org = (await services.storage.orgs.getBySlug('acme'))!;
  await seedProvedMailDomain(services.storage, org.orgId, 'acme.example', services.now());
  const created = await owner.browser.post('/org/acme/connections', {
    type: 'oidc',
    name: 'Acme SSO',
    oidc: { issuer: upstream.issuer, client_id: 'keyplane', client_secret: 'upstream-secret-0123456789' },
    domains: ['acme.example'],
    required: true,
  });
  t.equal(created.statusCode, 201, created.body);
  const connectionId = created.json().connectionId as string;
  // Mia is managed by Acme (as JIT or SCIM leave her); Pat is a personal account.
  const now = services.now();
  await services.storage.identities.create({
    identityId: 'usr_mia',
    username: 'mia',
    displayName: '',
    preferences: {},
    founder: false,
    managedBy: org.orgId,
    createdAt: now,
    updatedAt: now,
  });
  await verifiedEmail(services, 'usr_mia', 'mia@acme.example');
  await verifiedEmail(services, 'usr_mia', 'mia@elsewhere.example');
  const pat = await built.signIn({ username: 'pat' });
  await verifiedEmail(services, pat.identityId, 'pat@personal.example');
  const put = (body: Record<string, unknown>) =>
    app.inject({ method: 'PUT', url: `/admin/connections/${connectionId}`, headers: admin, payload: body });
  const setRequired = (body: Record<string, unknown>) =>
    owner.browser.request('PUT', `/org/acme/connections/${connectionId}`, body);
  return { ...built, owner, org, connectionId, pat, put, setRequired };
}

t.test('a magic link for any address under the required domain is sso_required, known or not', async (t) => {
  const { app, mails } = await setUp(t);
  for (const email of ['mia@acme.example', 'nobody@acme.example', 'MIA@Acme.Example']) {
    const res = await new Browser(app).post('/auth/magic/request', { email });
    t.equal(res.statusCode, 403, email);
    t.equal(res.json().reason, 'sso_required', email);
  }
  const form = await app.inject({
    method: 'POST',
    url: '/auth/magic/request',
    headers: { origin: TEST_ISSUER, accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'email=nobody%40acme.example',
  });
  t.equal(form.statusCode, 403);
  t.match(form.body, /id="form-error"[^>]*>The org that manages this account/, 'the no-JavaScript form names it');
  // Mia's address elsewhere is not mailed, with the answer an unknown address gets.
  const elsewhere = await new Browser(app).post('/auth/magic/request', { email: 'mia@elsewhere.example' });
  const unknown = await new Browser(app).post('/auth/magic/request', { email: 'nobody@elsewhere.example' });
  t.equal(elsewhere.statusCode, 200);
  t.same(elsewhere.json(), unknown.json());
  t.equal((await mails()).length, 0, 'nothing was mailed');
  // Pat is not managed by Acme: his link is mailed.
  t.equal((await new Browser(app).post('/auth/magic/request', { email: 'pat@personal.example' })).statusCode, 200);
  t.equal((await mails()).length, 1);
});

t.test('a magic link mailed before SSO became required is refused at redemption, and stays unused', async (t) => {
  const { app, mails, setRequired, services } = await setUp(t);
  t.equal((await setRequired({ required: false })).statusCode, 200);
  const browser = new Browser(app);
  t.equal((await browser.post('/auth/magic/request', { email: 'mia@acme.example' })).statusCode, 200);
  const link = new URL(linkIn((await mails())[0]!, '/auth/magic')!);
  t.equal((await setRequired({ required: true })).statusCode, 200);
  const refused = await browser.get(link.pathname + link.search, { accept: 'text/html' });
  t.equal(refused.statusCode, 403);
  t.match(refused.body, /requires sign-in through its identity provider/, 'the page names the reason');
  t.same(await services.storage.sessions.listLive('usr_mia', services.now()), [], 'no session');
  t.equal((await setRequired({ required: false })).statusCode, 200);
  t.equal((await browser.get(link.pathname + link.search)).statusCode, 303, 'the link was not spent');
});

t.test('backup codes of a managed account are sso_required and are not spent; a personal one signs in', async (t) => {
  const { app, services, pat } = await setUp(t);
  const mia = await regenerateRecoveryCodes(services, { identityId: 'usr_mia', sessionId: 'ses_seed' });
  const refused = await new Browser(app).post('/auth/recovery/verify', { user: 'mia', code: mia.codes[0] });
  t.equal(refused.statusCode, 403);
  t.equal(refused.json().reason, 'sso_required');
  t.equal((await services.storage.recoveryCodes.listUnused('usr_mia')).length, 10, 'the code stays unused');
  const patCodes = await regenerateRecoveryCodes(services, { identityId: pat.identityId, sessionId: 'ses_seed' });
  const signedIn = await new Browser(app).post('/auth/recovery/verify', { user: 'pat', code: patCodes.codes[0] });
  t.equal(signedIn.statusCode, 200, signedIn.body);
});

t.test('a passkey only steps up a session an upstream sign-in started, within 12 hours of it', async (t) => {
  const { signIn, services, clock, connectionId } = await setUp(t);
  const passkeyAlone = await signIn({ username: 'mia' }).catch((e: Error) => e.message);
  t.match(passkeyAlone, /sso_required/, 'a passkey sign-in alone is refused');

  const started = services.now();
  const { browser } = await signIn({ username: 'mia', assurance: 'email', upstream: connectionId });
  const [session] = await services.storage.sessions.listLive('usr_mia', services.now());
  t.equal(session!.absoluteExpiresAt, started + 12 * HOUR, 'the session ends 12 h after the upstream sign-in');

  clock.advance(HOUR);
  await signIn({ username: 'mia', assurance: 'passkey' }, browser);
  const [stepped] = await services.storage.sessions.listLive('usr_mia', services.now());
  t.equal(stepped!.sessionId, session!.sessionId, 'the passkey stepped the same session up');
  t.equal(stepped!.assurance, 'passkey');
  t.equal(stepped!.absoluteExpiresAt, started + 12 * HOUR, 'and did not lengthen it');

  clock.advance(11 * HOUR);
  t.same(await services.storage.sessions.listLive('usr_mia', services.now()), [], 'ended after 12 h');
  const late = await signIn({ username: 'mia', assurance: 'passkey' }, browser).catch((e: Error) => e.message);
  t.match(late, /sso_required/, 'a passkey cannot carry the session on');
});

t.test(
  'real passkey ceremonies: refused alone and as a step-up of a session no upstream sign-in started',
  async (t) => {
    const { app, signIn, services, connectionId, setRequired } = await setUp(t);
    // Before SSO was required, Mia signed in without the upstream.
    t.equal((await setRequired({ required: false })).statusCode, 200);
    const { browser: early } = await signIn({ username: 'mia', assurance: 'passkey' });
    t.equal((await setRequired({ required: true })).statusCode, 200);
    // Now she signs in upstream (and steps up, as a sensitive session), then adds a passkey.
    const started = services.now();
    const { browser } = await signIn({ username: 'mia', assurance: 'sensitive', upstream: connectionId });
    const phone = new SoftAuthenticator(TEST_ISSUER);
    const begin = await browser.post('/auth/passkeys/add-options');
    t.equal(begin.statusCode, 200, begin.body);
    const added = await browser.post('/auth/passkeys/add-verify', { response: phone.create(begin.json().options) });
    t.equal(added.statusCode, 200, added.body);

    const stepUp = async (b: Browser) => {
      const options = await b.post('/auth/step-up/options');
      t.equal(options.statusCode, 200, options.body);
      return b.post('/auth/step-up/verify', { response: phone.get(options.json().options) });
    };
    const [upstreamSession] = (await services.storage.sessions.listLive('usr_mia', services.now())).filter((s) =>
      s.amr.includes('fed'),
    );
    t.equal((await stepUp(browser)).statusCode, 200, 'a step-up of the upstream session');
    const stepped = (await services.storage.sessions.listLive('usr_mia', services.now())).find(
      (s) => s.sessionId === upstreamSession!.sessionId,
    );
    t.equal(stepped!.absoluteExpiresAt, started + 12 * HOUR, 'ends 12 h after the upstream sign-in');
    const refused = await early.post('/auth/step-up/options');
    t.equal(refused.statusCode, 401, 'the session from before ended when SSO became required');

    const fresh = new Browser(app);
    const options = (await fresh.get('/auth/assertion-options')).json().options;
    const alone = await fresh.post('/auth/assertion-verify', { response: phone.get(options) });
    t.equal(alone.statusCode, 403);
    t.equal(alone.json().reason, 'sso_required', 'a passkey sign-in alone');
  },
);

t.test(
  'turning SSO required on ends the managed sessions no upstream sign-in started, and caps the others',
  async (t) => {
    const { app, signIn, services, clock, connectionId, setRequired, pat, owner } = await setUp(t);
    const ownerStepsUp = () => signIn({ username: 'olivia', assurance: 'sensitive' }, owner.browser);
    t.equal((await setRequired({ required: false })).statusCode, 200);
    const { browser: own } = await signIn({ username: 'mia', assurance: 'passkey' });
    const fedStarted = services.now();
    await signIn({ username: 'mia', assurance: 'email', upstream: connectionId });
    const live = async (identityId: string) => await services.storage.sessions.listLive(identityId, services.now());
    t.equal((await live('usr_mia')).length, 2);
    t.ok(
      (await live('usr_mia')).every((s) => s.absoluteExpiresAt > fedStarted + 12 * HOUR),
      'everyday lifetimes',
    );
    const patBefore = await live(pat.identityId);

    clock.advance(2 * HOUR);
    await ownerStepsUp();
    const on = await setRequired({ required: true, session_max_hours: 8 });
    t.equal(on.statusCode, 200, on.body);
    const [kept] = await live('usr_mia');
    t.equal((await live('usr_mia')).length, 1, 'the passkey-only session ended');
    t.ok(kept!.amr.includes('fed'), 'the upstream one lives on');
    t.equal(kept!.absoluteExpiresAt, fedStarted + 8 * HOUR, 'within the cap after its upstream sign-in');
    t.same(await live(pat.identityId), patBefore, 'an account the org does not manage is untouched');
    t.equal((await own.get('/account?format=json')).statusCode, 401, 'the browser holding it is signed out');
    const ended = await app.inject({
      method: 'GET',
      url: '/admin/receipts?type=federation.session_ended',
      headers: admin,
    });
    t.match(ended.json().receipts, [
      { receipt: { connectionId, identityId: 'usr_mia', actor: { type: 'person' }, outcome: 'success' } },
    ]);

    // A lower cap later brings the live session's end forward again; an expired one ends.
    await ownerStepsUp();
    t.equal((await setRequired({ session_max_hours: 1 })).statusCode, 200);
    t.same(await live('usr_mia'), [], 'past the new cap: ended');
    t.equal(
      (await app.inject({ method: 'GET', url: '/admin/receipts?type=federation.session_ended', headers: admin })).json()
        .receipts.length,
      2,
    );
  },
);

t.test('the cap is a connection setting of 1 to 12 hours, an org one only', async (t) => {
  const { signIn, services, connectionId, setRequired, put, owner } = await setUp(t);
  t.equal((await setRequired({ session_max_hours: 13 })).json().reason, 'invalid_request');
  t.equal((await setRequired({ session_max_hours: 8 })).statusCode, 200);
  t.equal((await owner.browser.get(`/org/acme/connections/${connectionId}`)).json().session_max_hours, 8);
  const started = services.now();
  await signIn({ username: 'mia', assurance: 'email', upstream: connectionId });
  const [session] = await services.storage.sessions.listLive('usr_mia', services.now());
  t.equal(session!.absoluteExpiresAt, started + 8 * HOUR);
  t.equal((await put({ session_max_hours: 8 })).statusCode, 404, "the operator's path does not reach an org's");
});

t.test('accounts the org does not manage sign in as before', async (t) => {
  const { signIn, services, pat } = await setUp(t);
  const { browser } = await signIn({ username: 'pat' });
  t.ok(browser.cookies.get('kp_session'));
  const [session] = await services.storage.sessions.listLive(pat.identityId, services.now());
  t.ok(session!.absoluteExpiresAt - services.now() > 12 * HOUR, 'the everyday lifetime');
});
