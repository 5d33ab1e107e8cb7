import t from 'tap';
import * as client from 'openid-client';
import { decodeEntities } from '../../helpers/oidc.js';
import { passkeySignUp, refusal, register, start, type CookieJar } from '../../helpers/openid-client.js';

/**
 * The device authorization grant (RFC 8628) through openid-client's `initiateDeviceAuthorization`
 * and `pollDeviceAuthorizationGrant` against a real control plane; the person's side is the
 * verification page driven over HTTP with a passkey session (the Chromium suite drives it in a
 * browser).
 */
const DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code';

async function decideAtPage(base: string, jar: CookieJar, userCode: string, decision: 'allow' | 'deny') {
  const post = (path: string, form: Record<string, string>) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
  const shown = await (await post('/device', { user_code: userCode })).text();
  const approval = /name="approval" value="([^"]+)"/.exec(shown)?.[1];
  if (!approval) throw new Error(`no consent page: ${shown.slice(0, 300)}`);
  return (await post('/device/approve', { approval: decodeEntities(approval), decision })).text();
}

t.test('openid-client: a CLI signs in through the device grant, and the refusals of RFC 8628', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'device-heidi');
  const registered = await register(base, {
    client_name: 'Heidi CLI',
    redirect_uris: undefined,
    post_logout_redirect_uris: undefined,
    grant_types: [DEVICE_CODE, 'refresh_token'],
    resources: [],
    token_endpoint_auth_method: 'none',
  });
  const config = await client.discovery(new URL(base), registered.client_id, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });
  t.equal(config.serverMetadata().device_authorization_endpoint, `${base}/auth/device`);

  const started = await client.initiateDeviceAuthorization(config, { scope: 'openid profile offline_access' });
  t.match(started, { user_code: /^[A-Z]{4}-[A-Z]{4}$/, verification_uri: `${base}/device`, interval: 5 });
  const polling = client.pollDeviceAuthorizationGrant(config, started);
  const done = await decideAtPage(base, jar, started.user_code, 'allow');
  t.match(done, 'data-result="approved"');
  const tokens = await polling;
  t.match(tokens.claims(), { aud: registered.client_id, preferred_username: 'device-heidi', acr: 'passkey' });
  t.ok(tokens.refresh_token);
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
  t.equal(refreshed.claims()!.sub, tokens.claims()!.sub, 'the refresh token works like any other');

  const declined = await client.initiateDeviceAuthorization(config, { scope: 'openid' });
  const refusedPoll = refusal(client.pollDeviceAuthorizationGrant(config, declined));
  t.match(await decideAtPage(base, jar, declined.user_code, 'deny'), 'data-result="denied"');
  t.equal(await refusedPoll, 'access_denied');

  const codeOnly = await register(base, { token_endpoint_auth_method: 'none' });
  const codeOnlyConfig = await client.discovery(new URL(base), codeOnly.client_id, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });
  t.equal(
    await refusal(client.initiateDeviceAuthorization(codeOnlyConfig, { scope: 'openid' })),
    'unauthorized_client',
  );
});
