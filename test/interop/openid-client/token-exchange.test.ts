import t from 'tap';
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import { CALLBACK, RESOURCE, browse, passkeySignUp, refusal, register, start } from '../../helpers/openid-client.js';

/**
 * Token exchange for delegation (RFC 8693) through openid-client's `genericGrantRequest`: a
 * relying party exchanges the person's token for one at a downstream API, naming itself as the
 * actor; a second service, once the person approved it, exchanges that one again (nested `act`);
 * introspection shows the actors; and the refusals: no consent, wider scope, unregistered
 * resource, unregistered grant, a revoked subject token.
 */
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const DOWNSTREAM = 'https://ledger.notes.example.com';

async function configure(base: string, registered: Record<string, any>) {
  return client.discovery(
    new URL(base),
    registered.client_id,
    registered.client_secret,
    client.ClientSecretBasic(registered.client_secret as string),
    { execute: [client.allowInsecureRequests] },
  );
}

async function signInTo(config: client.Configuration, base: string, jar: Parameters<typeof browse>[1]) {
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid email profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 'x',
  });
  return client.authorizationCodeGrant(config, await browse(url, jar, base), {
    pkceCodeVerifier: verifier,
    expectedState: 'x',
  });
}

t.test('openid-client: delegation by token exchange with act, receipts and introspection', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'exchange-judy');
  const app = await register(base, {
    client_name: 'Notes',
    grant_types: ['authorization_code', EXCHANGE],
    scope: 'openid email profile',
    resources: [RESOURCE],
  });
  const service = await register(base, {
    client_name: 'Notes API',
    grant_types: ['authorization_code', EXCHANGE],
    scope: 'openid email profile',
    resources: [DOWNSTREAM],
  });
  const appConfig = await configure(base, app);
  const serviceConfig = await configure(base, service);
  t.ok(appConfig.serverMetadata().grant_types_supported!.includes(EXCHANGE));

  const signedIn = await signInTo(appConfig, base, jar);
  const exchange = (config: client.Configuration, token: string, extra: Record<string, string> = {}) =>
    client.genericGrantRequest(config, EXCHANGE, {
      subject_token: token,
      subject_token_type: ACCESS_TOKEN,
      ...extra,
    });

  const first = await exchange(appConfig, signedIn.access_token, { resource: RESOURCE, scope: 'email' });
  t.equal(first.issued_token_type, ACCESS_TOKEN);
  t.match(first, { scope: 'email', receipt: /^[0-9a-f]{64}$/ });
  const firstClaims = decodeJwt(first.access_token);
  t.match(firstClaims, { aud: RESOURCE, client_id: app.client_id, act: { sub: app.client_id } });
  t.equal(firstClaims.sub, signedIn.claims()!.sub, 'still the person');

  t.equal(
    await refusal(exchange(serviceConfig, first.access_token, { resource: DOWNSTREAM })),
    'invalid_grant',
    'a service the person never approved cannot act for them',
  );
  await signInTo(serviceConfig, base, jar);
  const second = await exchange(serviceConfig, first.access_token, { resource: DOWNSTREAM });
  t.match(decodeJwt(second.access_token), {
    aud: DOWNSTREAM,
    client_id: service.client_id,
    scope: 'email',
    act: { sub: service.client_id, act: { sub: app.client_id } },
  });
  const introspected = await client.tokenIntrospection(serviceConfig, second.access_token);
  t.match(introspected, {
    active: true,
    client_id: service.client_id,
    act: { sub: service.client_id, act: { sub: app.client_id } },
  });

  t.equal(
    await refusal(exchange(serviceConfig, first.access_token, { resource: DOWNSTREAM, scope: 'email profile' })),
    'invalid_scope',
    'never wider than the subject token',
  );
  t.equal(
    await refusal(exchange(serviceConfig, first.access_token, { resource: RESOURCE })),
    'invalid_target',
    'a resource the client did not register',
  );
  t.equal(await refusal(exchange(serviceConfig, first.access_token)), 'invalid_target', 'the resource is required');
  t.equal(await refusal(exchange(serviceConfig, 'not-a-token', { resource: DOWNSTREAM })), 'invalid_grant');
  const plain = await register(base, { client_name: 'Plain' });
  t.equal(
    await refusal(exchange(await configure(base, plain), signedIn.access_token, { resource: RESOURCE })),
    'unauthorized_client',
  );
  await client.tokenRevocation(appConfig, first.access_token);
  t.equal(
    await refusal(exchange(serviceConfig, first.access_token, { resource: DOWNSTREAM })),
    'invalid_grant',
    'a revoked subject token is not exchanged',
  );
});
