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

async function signInTo(
  config: client.Configuration,
  base: string,
  jar: Parameters<typeof browse>[1],
  extra: Record<string, string> = {},
  dpop?: client.DPoPHandle,
) {
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid email profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 'x',
    ...extra,
  });
  return client.authorizationCodeGrant(
    config,
    await browse(url, jar, base),
    { pkceCodeVerifier: verifier, expectedState: 'x' },
    undefined,
    dpop ? { DPoP: dpop } : {},
  );
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
  // The Notes API receives tokens aimed at it (RESOURCE) and calls the ledger (DOWNSTREAM).
  const service = await register(base, {
    client_name: 'Notes API',
    grant_types: ['authorization_code', EXCHANGE],
    scope: 'openid email profile',
    resources: [RESOURCE, DOWNSTREAM],
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
  t.equal(
    await refusal(exchange(serviceConfig, first.access_token, { resource: DOWNSTREAM })),
    'invalid_grant',
    'the approval of the service never named the downstream resource',
  );
  await signInTo(serviceConfig, base, jar, { resource: DOWNSTREAM });
  t.equal(
    await refusal(exchange(serviceConfig, signedIn.access_token, { resource: DOWNSTREAM })),
    'invalid_grant',
    'a subject token aimed at another client (the app itself) is not the service’s to exchange',
  );
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
    await refusal(exchange(serviceConfig, first.access_token, { resource: 'https://elsewhere.example.com' })),
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

t.test(
  'openid-client: an exchange keeps the DPoP binding, the audience and the consent; public clients cannot exchange',
  async (t) => {
    const server = await start(t);
    const base = server.url;
    const jar = await passkeySignUp(base, 'exchange-kim');
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
      resources: [RESOURCE, DOWNSTREAM],
    });
    const appConfig = await configure(base, app);
    const serviceConfig = await configure(base, service);
    const key = await client.randomDPoPKeyPair('ES256');
    const bound = await signInTo(appConfig, base, jar, { resource: RESOURCE }, client.getDPoPHandle(appConfig, key));
    const jkt = (decodeJwt(bound.access_token).cnf as { jkt: string }).jkt;
    t.ok(jkt, 'the subject token is DPoP-bound');
    const exchange = (extra: Record<string, string>, dpop?: client.DPoPHandle, config = serviceConfig) =>
      client.genericGrantRequest(
        config,
        EXCHANGE,
        { subject_token: bound.access_token, subject_token_type: ACCESS_TOKEN, ...extra },
        dpop ? { DPoP: dpop } : {},
      );

    await signInTo(serviceConfig, base, jar, { resource: DOWNSTREAM, scope: 'openid email' });
    t.equal(
      await refusal(exchange({ resource: DOWNSTREAM })),
      'invalid_dpop_proof',
      'a bound subject token without a proof',
    );
    const stranger = client.getDPoPHandle(serviceConfig, await client.randomDPoPKeyPair('ES256'));
    t.equal(
      await refusal(exchange({ resource: DOWNSTREAM }, stranger)),
      'invalid_dpop_proof',
      'a proof by another key',
    );
    const exchanged = await exchange({ resource: DOWNSTREAM }, client.getDPoPHandle(serviceConfig, key));
    t.equal(exchanged.token_type.toLowerCase(), 'dpop');
    t.match(
      decodeJwt(exchanged.access_token),
      { aud: DOWNSTREAM, cnf: { jkt }, scope: 'openid email' },
      'bound to the same key, within the approval',
    );
    t.equal(
      await refusal(exchange({ resource: DOWNSTREAM, scope: 'profile' }, client.getDPoPHandle(serviceConfig, key))),
      'invalid_grant',
      'a scope the person approved for the app but never for the service',
    );

    const publicClient = await register(base, {
      client_name: 'Notes CLI',
      grant_types: ['authorization_code', EXCHANGE],
      scope: 'openid email profile',
      resources: [RESOURCE],
      token_endpoint_auth_method: 'none',
    });
    const publicConfig = await client.discovery(new URL(base), publicClient.client_id, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
    t.equal(
      await refusal(exchange({ resource: RESOURCE }, client.getDPoPHandle(publicConfig, key), publicConfig)),
      'unauthorized_client',
      'a public client cannot exchange',
    );
  },
);

t.test('openid-client: an exchanged token ends with the grant it came from, two exchanges down', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'exchange-lena');
  const app = await register(base, {
    client_name: 'Notes',
    grant_types: ['authorization_code', 'refresh_token', EXCHANGE],
    scope: 'openid email profile offline_access',
    resources: [RESOURCE],
  });
  const service = await register(base, {
    client_name: 'Notes API',
    grant_types: ['authorization_code', EXCHANGE],
    scope: 'openid email profile',
    resources: [RESOURCE, DOWNSTREAM],
  });
  const appConfig = await configure(base, app);
  const serviceConfig = await configure(base, service);
  const signedIn = await signInTo(appConfig, base, jar, { scope: 'openid email offline_access', prompt: 'consent' });
  t.ok(signedIn.refresh_token);
  await signInTo(serviceConfig, base, jar, { resource: DOWNSTREAM, scope: 'openid email' });
  const exchange = (config: client.Configuration, token: string, resource: string) =>
    client.genericGrantRequest(config, EXCHANGE, {
      subject_token: token,
      subject_token_type: ACCESS_TOKEN,
      resource,
    });
  const first = await exchange(appConfig, signedIn.access_token, RESOURCE);
  const second = await exchange(serviceConfig, first.access_token, DOWNSTREAM);
  t.match(await client.tokenIntrospection(serviceConfig, second.access_token), { active: true });

  // The person's app gives up its refresh family: everything exchanged from it ends with it.
  await client.tokenRevocation(appConfig, signedIn.refresh_token!);
  t.match(await client.tokenIntrospection(appConfig, first.access_token), { active: false }, 'one exchange down');
  t.match(await client.tokenIntrospection(serviceConfig, second.access_token), { active: false }, 'two exchanges down');
  t.equal(await refusal(exchange(serviceConfig, first.access_token, DOWNSTREAM)), 'invalid_grant');
});
