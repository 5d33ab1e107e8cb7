import t, { type Test } from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import {
  ADMIN,
  REDIRECT,
  authorizeUrl,
  decodeEntities,
  goodRequest,
  obtainCode,
  pkcePair,
  registerClient,
} from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['oidc', 'clients'] as const;

/** response_mode=form_post (OAuth 2.0 Form Post Response Mode) and what the consent page shows of the client. */

async function setup(t: Test, metadata: Record<string, unknown> = {}) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const client = await registerClient(built.app, metadata);
  const { browser } = await built.signIn({ username: 'alice' });
  return { ...built, client, browser, challenge: pkcePair().challenge };
}

function hiddenInputs(body: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const match of body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    out[match[1]!] = decodeEntities(match[2]!);
  return out;
}

t.test('form_post answers with a self-submitting form to the redirect URI under a strict CSP', async (t) => {
  const { app, client, browser, challenge } = await setup(t);
  await obtainCode(browser, goodRequest(client, challenge));
  const res = await browser.get(authorizeUrl(goodRequest(client, challenge, { response_mode: 'form_post' })));
  t.equal(res.statusCode, 200);
  t.equal(res.headers.location, undefined, 'no redirect: the response travels in the POST body');
  t.match(res.body, `<form id="kp-form-post" method="post" action="${REDIRECT}" data-action="form-post">`);
  const fields = hiddenInputs(res.body);
  t.match(fields, { state: 'st-123', iss: 'http://localhost:4400' });
  t.match(fields.code, /^[A-Za-z0-9_-]{43}$/);
  t.match(res.body, /<script type="module" nonce="[^"]+" src="\/auth\/authorize\/form-post\.js"><\/script>/);
  t.match(res.body, /<noscript>.*<button type="submit">Continue to the app<\/button><\/noscript>/s);
  t.notMatch(res.body, /onload=|onclick=|<script>/);
  const csp = String(res.headers['content-security-policy']);
  t.match(csp, /script-src 'nonce-[^']+' 'strict-dynamic'/);
  t.match(csp, /form-action 'self' https:\/\/notes\.example\.com;/);
  t.match(csp, /frame-ancestors 'none'/);
  t.equal(res.headers['cache-control'], 'no-store');
  const script = await app.inject({ method: 'GET', url: '/auth/authorize/form-post.js' });
  t.equal(script.statusCode, 200);
  t.match(script.headers['content-type'], /text\/javascript/);
  t.match(script.body, /HTMLFormElement\.prototype\.submit\.call\(form\)/);

  const error = await browser.get(
    authorizeUrl(goodRequest(client, challenge, { response_mode: 'form_post', response_type: 'token' })),
  );
  t.equal(error.statusCode, 200);
  t.match(hiddenInputs(error.body), { error: 'unsupported_response_type', state: 'st-123' });
});

t.test('the consent page shows the logo, privacy policy and terms; the CSP admits that one image', async (t) => {
  const { browser, client, challenge } = await setup(t, {
    client_name: 'Notes <b>',
    logo_uri: 'https://cdn.notes.example.com/brand/logo.png?v=2',
    policy_uri: 'https://notes.example.com/privacy',
    tos_uri: 'https://notes.example.com/terms',
  });
  const res = await browser.get(authorizeUrl(goodRequest(client, challenge)));
  t.equal(res.statusCode, 200);
  t.match(
    res.body,
    '<img src="https://cdn.notes.example.com/brand/logo.png?v=2" alt="Logo of Notes &lt;b&gt;" width="64" height="64" referrerpolicy="no-referrer" data-field="logo_uri">',
  );
  t.match(
    res.body,
    /<a href="https:\/\/notes\.example\.com\/privacy" rel="noopener noreferrer" target="_blank" data-field="policy_uri">privacy policy<\/a>/,
  );
  t.match(
    res.body,
    /<a href="https:\/\/notes\.example\.com\/terms" rel="noopener noreferrer" target="_blank" data-field="tos_uri">terms of service<\/a>/,
  );
  const csp = String(res.headers['content-security-policy']);
  t.match(csp, /img-src 'self' data: https:\/\/cdn\.notes\.example\.com\/brand\/logo\.png;/, 'exactly that path');
  t.match(csp, /default-src 'none'/);
  t.match(res.body, /data-action="continue"/, 'the form is still there');
});

t.test('a logo that is not https is not shown and the CSP stays as it is', async (t) => {
  const { browser, client, challenge } = await setup(t, {
    logo_uri: 'http://localhost:8080/logo.png',
    policy_uri: 'https://notes.example.com/privacy',
  });
  const res = await browser.get(authorizeUrl(goodRequest(client, challenge)));
  t.notMatch(res.body, /<img/);
  t.match(String(res.headers['content-security-policy']), /img-src 'self' data:;/);
  t.match(res.body, /data-field="policy_uri">privacy policy<\/a>\./, 'only the policy link');
  t.notMatch(res.body, /data-field="tos_uri"/);
});
