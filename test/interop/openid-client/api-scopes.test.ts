import t from 'tap';
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import {
  ADMIN,
  CALLBACK,
  RESOURCE,
  browse,
  passkeySignUp,
  refusal,
  register,
  start,
} from '../../helpers/openid-client.js';

/**
 * APIs with their own scopes (docs/apis.md) through openid-client: the operator declares two APIs
 * that both offer `items:read`; a person's sign-in for one carries its scope, token exchange
 * narrows to the other API's scope (never wider), introspection and refresh carry them, and the
 * `client_credentials` grant gives a confidential client a token for an API that admits it.
 */
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const DOWNSTREAM = 'https://downstream.notes.example.com';
const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };

async function declare(base: string, body: Record<string, unknown>) {
  const res = await fetch(`${base}/admin/apis`, { method: 'POST', headers: admin, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const scopes = [
  { name: 'items:read', description: { en: 'Read your items', de: 'Ihre Einträge lesen' } },
  { name: 'items:write', description: 'Change your items' },
];

async function configure(base: string, registered: Record<string, any>) {
  return client.discovery(
    new URL(base),
    registered.client_id,
    registered.client_secret,
    client.ClientSecretBasic(registered.client_secret as string),
    { execute: [client.allowInsecureRequests] },
  );
}

t.test('openid-client: API scopes through sign-in, refresh, token exchange and introspection', async (t) => {
  const server = await start(t);
  const base = server.url;
  t.equal((await declare(base, { resource: RESOURCE, name: 'Notes', scopes })).status, 201);
  t.equal((await declare(base, { resource: DOWNSTREAM, name: 'Ledger', scopes })).status, 201);
  const again = await declare(base, { resource: RESOURCE, name: 'Notes', scopes });
  t.match(again, { status: 409, body: { reason: 'conflict' } }, 'a resource is declared once');
  const reserved = await declare(base, {
    resource: 'https://x.example.com',
    name: 'X',
    scopes: [{ name: 'ssf.manage', description: 'x' }],
  });
  t.match(reserved, { status: 400, body: { reason: 'invalid_scope' } }, 'ssf.* is reserved');

  const jar = await passkeySignUp(base, 'api-scopes-ada');
  const app = await register(base, {
    client_name: 'Notes',
    grant_types: ['authorization_code', 'refresh_token', EXCHANGE],
    scope: 'openid offline_access',
    resources: [RESOURCE, DOWNSTREAM],
  });
  const config = await configure(base, app);
  t.ok(config.serverMetadata().scopes_supported!.includes('items:read'), 'discovery lists declared scopes');
  t.ok(config.serverMetadata().grant_types_supported!.includes('client_credentials'));

  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid offline_access items:read undeclared:scope',
    resource: RESOURCE,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 's',
  });
  const tokens = await client.authorizationCodeGrant(config, await browse(url, jar, base), {
    pkceCodeVerifier: verifier,
    expectedState: 's',
  });
  const claims = decodeJwt(tokens.access_token);
  t.match(claims, { aud: RESOURCE, scope: 'openid offline_access items:read' }, 'one aud; undeclared scopes dropped');
  t.match(await client.tokenIntrospection(config, tokens.access_token), { active: true, scope: /items:read/ });

  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
  t.match(decodeJwt(refreshed.access_token), { aud: RESOURCE, scope: /items:read/ }, 'refresh keeps the API scope');

  const exchange = (extra: Record<string, string>) =>
    client.genericGrantRequest(config, EXCHANGE, {
      subject_token: tokens.access_token,
      subject_token_type: ACCESS_TOKEN,
      ...extra,
    });
  const narrowed = await exchange({ resource: DOWNSTREAM, scope: 'items:read' });
  t.match(decodeJwt(narrowed.access_token), {
    aud: DOWNSTREAM,
    scope: 'items:read',
    sub: claims.sub,
    act: { sub: app.client_id },
  });
  t.equal(
    await refusal(exchange({ resource: DOWNSTREAM, scope: 'items:write' })),
    'invalid_scope',
    'an exchange never widens',
  );
  t.equal(await refusal(exchange({ resource: 'https://nowhere.example.com' })), 'invalid_target');
});

t.test('openid-client: client_credentials gives a confidential client a token for an API that admits it', async (t) => {
  const server = await start(t);
  const base = server.url;
  const service = await register(base, {
    client_name: 'Billing job',
    grant_types: ['client_credentials'],
    redirect_uris: [],
    post_logout_redirect_uris: [],
    scope: 'openid',
    resources: [],
  });
  const stranger = await register(base, {
    client_name: 'Stranger',
    grant_types: ['client_credentials'],
    redirect_uris: [],
    post_logout_redirect_uris: [],
    scope: 'openid',
    resources: [],
  });
  const declared = await declare(base, {
    resource: RESOURCE,
    name: 'Notes',
    scopes,
    allowed_clients: [service.client_id],
  });
  t.equal(declared.status, 201);
  const config = await configure(base, service);
  const issued = await client.clientCredentialsGrant(config, { resource: RESOURCE, scope: 'items:read openid' });
  const claims = decodeJwt(issued.access_token);
  t.match(claims, { sub: service.client_id, client_id: service.client_id, aud: RESOURCE, scope: 'items:read' });
  t.notOk(claims.acr ?? claims.svc, 'no person behind it');
  t.notOk(issued.refresh_token, 'RFC 6749 §4.4.3: no refresh token');
  t.match(await client.tokenIntrospection(config, issued.access_token), { active: true, scope: 'items:read' });
  const all = await client.clientCredentialsGrant(config, { resource: RESOURCE });
  t.equal(all.scope, 'items:read items:write', 'without scope: every scope the API admits it to');

  t.equal(
    await refusal(client.clientCredentialsGrant(config, { scope: 'items:read' })),
    'invalid_target',
    'the API must be named',
  );
  t.equal(
    await refusal(client.clientCredentialsGrant(config, { resource: RESOURCE, scope: 'openid email' })),
    'invalid_scope',
    "the provider's scopes speak of a person: never granted to a client alone",
  );
  // Clients the operator registered are the operator API's own: admitted without being listed.
  await fetch(`${base}/admin/apis/${declared.body.apiId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({ resource: RESOURCE, name: 'Notes', scopes, allowed_clients: [] }),
  });
  const other = await configure(base, stranger);
  t.ok(await client.clientCredentialsGrant(other, { resource: RESOURCE }), "the operator's own clients by default");

  const publicClient = await fetch(`${base}/register`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({
      grant_types: ['client_credentials'],
      token_endpoint_auth_method: 'none',
      redirect_uris: [],
    }),
  });
  t.match(
    { status: publicClient.status, body: await publicClient.json() },
    { status: 400, body: { error: 'invalid_client_metadata' } },
    'a public client may not register client_credentials',
  );
});
