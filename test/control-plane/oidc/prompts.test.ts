import t, { type Test } from 'tap';
import { SignJWT, decodeJwt, decodeProtectedHeader, generateKeyPair, type CryptoKey } from 'jose';
import { TEST_ISSUER, manualClock } from '../../helpers/build.js';
import { Browser, buildSignedIn } from '../../helpers/signed-in.js';
import {
  ADMIN,
  authorizeUrl,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  redirectParams,
  registerClient,
  type Registered,
} from '../../helpers/oidc.js';

/** id_token_hint and prompt=select_account at /auth/authorize (OIDC Core §3.1.2.1). */

async function setup(t: Test) {
  const clock = manualClock();
  const built = await buildSignedIn(t, { now: clock.now, config: { adminToken: ADMIN } });
  const client = await registerClient(built.app);
  return { ...built, clock, client };
}

async function idTokenFor(app: Parameters<typeof exchangeCode>[0], browser: Browser, client: Registered) {
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  const res = await exchangeCode(app, client, code, verifier);
  if (res.statusCode !== 200) throw new Error(res.body);
  return res.json().id_token as string;
}

function subOfCode(app: Parameters<typeof exchangeCode>[0], client: Registered, code: string, verifier: string) {
  return exchangeCode(app, client, code, verifier).then((res) => decodeJwt(res.json().id_token as string).sub);
}

t.test('id_token_hint for A while B is signed in: login_required under prompt=none', async (t) => {
  const { app, client, signIn, clock } = await setup(t);
  const { browser, identityId: alice } = await signIn({ username: 'alice' });
  const aliceToken = await idTokenFor(app, browser, client);
  clock.advance(1000);
  const { identityId: bob } = await signIn({ username: 'bob' }, browser);
  await idTokenFor(app, browser, client);
  t.not(alice, bob);

  const { verifier, challenge } = pkcePair();
  const silent = await browser.get(
    authorizeUrl(goodRequest(client, challenge, { prompt: 'none', id_token_hint: aliceToken })),
  );
  t.equal(silent.statusCode, 302);
  t.equal(redirectParams(silent).get('error'), 'login_required', 'never a code for bob');
  t.notOk(redirectParams(silent).get('code'));

  // Without prompt=none the person is asked who should sign in; whoever signs in then is the answer.
  const asked = await browser.get(authorizeUrl(goodRequest(client, challenge, { id_token_hint: aliceToken })));
  t.equal(asked.statusCode, 303);
  const location = new URL(String(asked.headers.location), TEST_ISSUER);
  t.equal(location.pathname, '/auth');
  clock.advance(1000);
  await signIn({ username: 'alice' }, browser);
  const resumed = await browser.get(location.searchParams.get('return')!);
  t.equal(resumed.statusCode, 302);
  t.equal(await subOfCode(app, client, redirectParams(resumed).get('code')!, verifier), alice);
});

t.test('id_token_hint for the signed-in account passes, even once expired; a foreign one is refused', async (t) => {
  const { app, client, signIn, clock } = await setup(t);
  const other = await registerClient(app, { client_name: 'Other' });
  const { browser, identityId } = await signIn({ username: 'alice' });
  const token = await idTokenFor(app, browser, client);
  const otherToken = await idTokenFor(app, browser, other);
  clock.advance(3600_000);
  t.ok((decodeJwt(token).exp as number) * 1000 < clock.now(), 'the hint has expired');
  const { verifier, challenge } = pkcePair();
  const res = await browser.get(authorizeUrl(goodRequest(client, challenge, { prompt: 'none', id_token_hint: token })));
  t.equal(res.statusCode, 302);
  t.equal(await subOfCode(app, client, redirectParams(res).get('code')!, verifier), identityId);

  const { privateKey } = await generateKeyPair('ES256');
  const forged = await new SignJWT({ sub: identityId, aud: client.client_id })
    .setProtectedHeader({ alg: 'ES256', kid: decodeProtectedHeader(token).kid!, typ: 'JWT' })
    .setIssuer(TEST_ISSUER)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(privateKey as CryptoKey);
  for (const [name, hint] of [
    ['signed by another key', forged],
    ['issued to another client', otherToken],
    ['not a JWT', 'abc'],
  ] as const) {
    const refused = await browser.get(authorizeUrl(goodRequest(client, challenge, { id_token_hint: hint })));
    t.equal(redirectParams(refused).get('error'), 'invalid_request', name);
  }
});

t.test('prompt=select_account offers this account or another, and continues with the choice', async (t) => {
  const { app, client, signIn, clock } = await setup(t);
  const { browser, identityId: alice } = await signIn({ username: 'alice' });
  await idTokenFor(app, browser, client);

  const { verifier, challenge } = pkcePair();
  const page = await browser.get(authorizeUrl(goodRequest(client, challenge, { prompt: 'select_account' })));
  t.equal(page.statusCode, 200);
  t.match(page.body, /Choose an account for Notes/);
  t.match(page.body, /You are signed in as <strong>alice<\/strong>/);
  t.match(String(page.headers['content-security-policy']), /frame-ancestors 'none'/);
  const continueHref = /href="([^"]+)" data-action="continue-as"/.exec(page.body)![1]!.replace(/&amp;/g, '&');
  const anotherHref = /href="([^"]+)" data-action="use-another-account"/.exec(page.body)![1]!.replace(/&amp;/g, '&');

  const stay = await browser.get(continueHref);
  t.equal(stay.statusCode, 302, 'approved before: the code at once');
  t.equal(await subOfCode(app, client, redirectParams(stay).get('code')!, verifier), alice);

  const other = pkcePair();
  const second = await browser.get(authorizeUrl(goodRequest(client, other.challenge, { prompt: 'select_account' })));
  const another = /href="([^"]+)" data-action="use-another-account"/.exec(second.body)![1]!.replace(/&amp;/g, '&');
  t.not(another, anotherHref, 'each offer parks its own request');
  const signInPage = new URL(another, TEST_ISSUER);
  t.equal(signInPage.pathname, '/auth');
  clock.advance(1000);
  const { identityId: bob } = await signIn({ username: 'bob' }, browser);
  const resumed = await browser.get(signInPage.searchParams.get('return')!);
  t.equal(resumed.statusCode, 200, "bob's one-tap page: bob has not approved this client");
  t.match(resumed.body, /signed in as <strong>bob<\/strong>/);
  const { code } = await obtainCode(browser, goodRequest(client, other.challenge, { prompt: 'consent' }));
  t.equal(await subOfCode(app, client, code, other.verifier), bob);
});

t.test('prompt=select_account without a session goes to sign-in; with none it is invalid_request', async (t) => {
  const { app, client } = await setup(t);
  const { challenge } = pkcePair();
  const res = await new Browser(app).get(authorizeUrl(goodRequest(client, challenge, { prompt: 'select_account' })));
  t.equal(res.statusCode, 303);
  t.equal(new URL(String(res.headers.location), TEST_ISSUER).pathname, '/auth');
  const both = await new Browser(app).get(
    authorizeUrl(goodRequest(client, challenge, { prompt: 'none select_account' })),
  );
  t.equal(redirectParams(both).get('error'), 'invalid_request', 'none stands alone (Core §3.1.2.1)');
});
