import t from 'tap';
import { createHash } from 'node:crypto';
import * as client from 'openid-client';
import { decodeJwt, exportJWK, generateKeyPair } from 'jose';
import { ADMIN, browse, passkeySignUp, refusal, start } from '../../helpers/openid-client.js';

/**
 * A client registered with `fapi_profile: "2.0"` through openid-client: private_key_jwt (aud the
 * issuer), PAR with DPoP, DPoP-bound tokens; and what the profile refuses at registration,
 * authorization and token time.
 */
const HTTPS_CALLBACK = 'https://bank.example.com/callback';

async function registerRaw(base: string, metadata: Record<string, unknown>) {
  const res = await fetch(`${base}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Bank', redirect_uris: [HTTPS_CALLBACK], scope: 'openid', ...metadata }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

t.test('openid-client: the FAPI 2.0 profile as a per-client switch', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'fapi-kim');
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bank-1', alg: 'ES256' };

  const secretClient = await registerRaw(base, {
    fapi_profile: '2.0',
    token_endpoint_auth_method: 'client_secret_basic',
  });
  t.equal(secretClient.body.error, 'invalid_client_metadata', 'client secrets are refused');
  const httpRedirect = await registerRaw(base, {
    fapi_profile: '2.0',
    token_endpoint_auth_method: 'private_key_jwt',
    jwks: { keys: [jwk] },
    redirect_uris: ['http://localhost:9/callback'],
  });
  t.equal(httpRedirect.body.error, 'invalid_client_metadata', 'http redirect URIs are refused');
  const rs256 = await registerRaw(base, {
    fapi_profile: '2.0',
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_signing_alg: 'RS256',
    jwks: { keys: [jwk] },
  });
  t.equal(rs256.body.error, 'invalid_client_metadata', 'RS256 is refused');

  const registered = await registerRaw(base, {
    fapi_profile: '2.0',
    token_endpoint_auth_method: 'private_key_jwt',
    jwks: { keys: [jwk] },
  });
  t.equal(registered.status, 201);
  t.match(registered.body, {
    fapi_profile: '2.0',
    require_pushed_authorization_requests: true,
    dpop_bound_access_tokens: true,
  });
  const config = await client.discovery(
    new URL(base),
    registered.body.client_id,
    undefined,
    client.PrivateKeyJwt({ key: privateKey, kid: 'bank-1' }),
    { execute: [client.allowInsecureRequests] },
  );
  const dpop = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
  const verifier = client.randomPKCECodeVerifier();
  const parameters = {
    redirect_uri: HTTPS_CALLBACK,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 'fapi',
  };

  const plain = await fetch(client.buildAuthorizationUrl(config, parameters), {
    redirect: 'manual',
    headers: { cookie: jar.header() },
  });
  t.equal(new URL(plain.headers.get('location')!).searchParams.get('error'), 'invalid_request', 'PAR is required');

  const url = await client.buildAuthorizationUrlWithPAR(config, parameters, { DPoP: dpop });
  const callback = await browse(url, jar, base, HTTPS_CALLBACK);
  t.equal(callback.searchParams.get('iss'), base, 'iss in the response');
  t.equal(
    await refusal(
      client.authorizationCodeGrant(config, new URL(callback), { pkceCodeVerifier: verifier, expectedState: 'fapi' }),
    ),
    'invalid_dpop_proof',
    'no token without DPoP',
  );
  const again = await browse(
    await client.buildAuthorizationUrlWithPAR(config, parameters, { DPoP: dpop }),
    jar,
    base,
    HTTPS_CALLBACK,
  );
  const tokens = await client.authorizationCodeGrant(
    config,
    again,
    { pkceCodeVerifier: verifier, expectedState: 'fapi' },
    undefined,
    { DPoP: dpop },
  );
  t.equal(tokens.token_type.toLowerCase(), 'dpop');
  t.ok((decodeJwt(tokens.access_token).cnf as { jkt?: string }).jkt, 'sender-constrained');
});

t.test(
  'openid-client: a FAPI client assertion names the issuer alone, lives briefly and tolerates 10 s of skew',
  async (t) => {
    const server = await start(t);
    const base = server.url;
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'bank-2', alg: 'ES256' };
    t.equal(
      (
        await registerRaw(base, {
          fapi_profile: '2.0',
          token_endpoint_auth_method: 'private_key_jwt',
          request_object_signing_alg: 'RS256',
          jwks: { keys: [jwk] },
        })
      ).body.error,
      'invalid_client_metadata',
      'a request object algorithm outside PS256, ES256, EdDSA is refused',
    );
    t.equal(
      (await registerRaw(base, { fapi_profile: '2.0', token_endpoint_auth_method: 'none' })).body.error,
      'invalid_client_metadata',
      'public clients are refused',
    );
    t.equal(
      (
        await registerRaw(base, {
          fapi_profile: '2.0',
          token_endpoint_auth_method: 'private_key_jwt',
          jwks: { keys: [jwk] },
          require_pushed_authorization_requests: false,
        })
      ).body.error,
      'invalid_client_metadata',
      'PAR cannot be switched off',
    );
    const registered = await registerRaw(base, {
      fapi_profile: '2.0',
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: { keys: [jwk] },
    });
    const push = async (modify: (header: Record<string, unknown>, payload: Record<string, unknown>) => void) => {
      const config = await client.discovery(
        new URL(base),
        registered.body.client_id,
        undefined,
        client.PrivateKeyJwt({ key: privateKey, kid: 'bank-2' }, { [client.modifyAssertion]: modify }),
        { execute: [client.allowInsecureRequests] },
      );
      const dpop = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
      return client.buildAuthorizationUrlWithPAR(
        config,
        {
          redirect_uri: HTTPS_CALLBACK,
          scope: 'openid',
          code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
          code_challenge_method: 'S256',
        },
        { DPoP: dpop },
      );
    };
    const now = () => Math.floor(Date.now() / 1000);
    t.ok(await push(() => {}), 'an assertion with aud the issuer passes');
    t.equal(
      await refusal(
        push((_h, p) => {
          p['aud'] = `${base}/auth/token`;
        }),
      ),
      'invalid_client',
      'aud the token endpoint (accepted from other clients) is refused',
    );
    t.equal(
      await refusal(
        push((_h, p) => {
          p['aud'] = [base, `${base}/auth/par`];
        }),
      ),
      'invalid_client',
      'aud listing more than the issuer is refused',
    );
    t.equal(
      await refusal(
        push((_h, p) => {
          p['iat'] = now() + 5;
        }),
      ),
      undefined,
      'iat 5 s in the future is clock skew, accepted',
    );
    t.equal(
      await refusal(
        push((_h, p) => {
          p['iat'] = now() + 70;
        }),
      ),
      'invalid_client',
      'iat more than 60 s in the future is refused',
    );
    t.equal(
      await refusal(
        push((_h, p) => {
          p['exp'] = now() + 3600;
        }),
      ),
      'invalid_client',
      'an assertion valid for an hour is refused',
    );
    t.equal(
      await refusal(
        push((_h, p) => {
          p['iat'] = now() - 400;
          p['exp'] = now() + 60;
        }),
      ),
      'invalid_client',
      'an assertion older than 5 minutes is refused',
    );
    const jti = `once-${Date.now()}`;
    t.equal(
      await refusal(
        push((_h, p) => {
          p['jti'] = jti;
        }),
      ),
      undefined,
    );
    t.equal(
      await refusal(
        push((_h, p) => {
          p['jti'] = jti;
        }),
      ),
      'invalid_client',
      'a jti is used once',
    );
    t.equal(
      await refusal(
        push((h) => {
          h['alg'] = 'HS256';
        }),
      ),
      'invalid_client',
      'an algorithm outside the profile is refused',
    );
  },
);

t.test('a FAPI client’s codes live at most 60 s when the server allows longer', async (t) => {
  const server = await start(t, { lifetimes: { authorizationCode: 300 } });
  const base = server.url;
  const jar = await passkeySignUp(base, 'fapi-lee');
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bank-3', alg: 'ES256' };
  const codeSeconds = async (metadata: Record<string, unknown>, auth: client.ClientAuth, redirect: string) => {
    const registered = await registerRaw(base, { redirect_uris: [redirect], ...metadata });
    const config = await client.discovery(new URL(base), registered.body.client_id, undefined, auth, {
      execute: [client.allowInsecureRequests],
    });
    const dpop = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
    const url = await client.buildAuthorizationUrlWithPAR(
      config,
      {
        redirect_uri: redirect,
        scope: 'openid',
        code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
        code_challenge_method: 'S256',
      },
      { DPoP: dpop },
    );
    const code = (await browse(url, jar, base, redirect)).searchParams.get('code')!;
    const stored = await server.app.kp.storage.oidc.findCode(createHash('sha256').update(code).digest('hex'));
    return (stored!.expiresAt - stored!.createdAt) / 1000;
  };
  t.equal(
    await codeSeconds(
      { fapi_profile: '2.0', token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [jwk] } },
      client.PrivateKeyJwt({ key: privateKey, kid: 'bank-3' }),
      HTTPS_CALLBACK,
    ),
    60,
    'FAPI: 60 s',
  );
  t.equal(
    await codeSeconds({ token_endpoint_auth_method: 'none' }, client.None(), 'http://localhost:9/callback'),
    300,
    'another client: the configured 300 s',
  );
});
