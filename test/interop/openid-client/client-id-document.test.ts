import t from 'tap';
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';
import { CALLBACK, browse, passkeySignUp, refusal, register, start } from '../../helpers/openid-client.js';

/**
 * openid-client v6 as an MCP-style public client whose `client_id` is the URL of its Client ID
 * Metadata Document, served over https by this test with a certificate from a test CA (trusted by
 * the control plane through `fetch.caFile`). The person signs up and in with the software
 * authenticator through the real passkey routes; the library runs discovery (RFC 8414 path), the
 * code flow with PKCE S256 and `resource` for a gateway's MCP route, and the refresh.
 */
t.test('openid-client: a Client ID Metadata Document client runs the code flow with PKCE and resource', async (t) => {
  const tls = makeTestCa(t);
  let clientId = '';
  const host = await startHttpsServer(t, tls, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.setHeader('cache-control', 'max-age=300');
    res.end(
      JSON.stringify({
        client_id: clientId,
        client_name: 'Interop MCP client',
        redirect_uris: [CALLBACK],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        scope: 'openid profile offline_access',
      }),
    );
  });
  clientId = `${host.origin}/oauth/client.json`;
  const server = await start(t, { 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile });
  const base = server.url;
  const resource = 'https://tools.example.com/mcp';
  await register(base, {
    client_name: 'Tools gateway',
    redirect_uris: ['https://tools.example.com/_gate/callback'],
    resources: [],
    gateway: { mode: 'enforce', routes: [{ path: '/mcp', mcp: true }] },
  });
  const jar = await passkeySignUp(base, 'interop-mcp');

  const metadata = await fetch(`${base}/.well-known/oauth-authorization-server`);
  t.equal(metadata.status, 200);
  const config = await client.discovery(new URL(base), clientId, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
    algorithm: 'oauth2',
  });
  t.equal(config.serverMetadata().client_id_metadata_document_supported, true);

  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid profile offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    resource,
  });
  const callback = await browse(url, jar, base);
  const tokens = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: verifier, expectedState: state, idTokenExpected: true },
    { resource },
  );
  const access = decodeJwt(tokens.access_token);
  t.equal(access.aud, resource, 'the access token is for the MCP route');
  t.equal(access.client_id, clientId);
  t.equal(tokens.claims()!.aud, clientId);
  t.equal(tokens.claims()!.preferred_username, 'interop-mcp');

  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
  t.equal(decodeJwt(refreshed.access_token).aud, resource, 'the refresh keeps the resource');
  t.same(host.requests, ['GET /oauth/client.json'], 'the document was fetched once and cached');

  const other = new client.Configuration(config.serverMetadata(), `${host.origin}/`, undefined, client.None());
  client.allowInsecureRequests(other);
  t.equal(
    await refusal(client.authorizationCodeGrant(other, callback, { pkceCodeVerifier: verifier, expectedState: state })),
    'invalid_client',
    'a URL without a path is refused at the token endpoint',
  );
});
