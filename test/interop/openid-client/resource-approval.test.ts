import t from 'tap';
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import { CALLBACK, RESOURCE, browse, passkeySignUp, refusal, register, start } from '../../helpers/openid-client.js';

/**
 * A resource the approval never named is never granted (RFC 8707; docs/security.md#resources-only-as-approved),
 * with openid-client as the relying party: a code approved without `resource` is redeemed, and
 * refreshed, only for the client itself, never for one of its registered resources; a code
 * approved for the resource keeps working for it.
 */
t.test(
  'openid-client: a code or refresh token approved without a resource is not turned into a token for one',
  async (t) => {
    const server = await start(t);
    const base = server.url;
    const jar = await passkeySignUp(base, 'resource-rita');
    const registered = await register(base, { client_name: 'Notes', resources: [RESOURCE] });
    const config = await client.discovery(
      new URL(base),
      registered.client_id,
      registered.client_secret,
      client.ClientSecretBasic(registered.client_secret as string),
      { execute: [client.allowInsecureRequests] },
    );
    const authorize = async (extra: Record<string, string> = {}) => {
      const verifier = client.randomPKCECodeVerifier();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: CALLBACK,
        scope: 'openid offline_access',
        prompt: 'consent',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state: 's',
        ...extra,
      });
      return { callback: await browse(url, jar, base), verifier };
    };

    const plain = await authorize();
    t.equal(
      await refusal(
        client.authorizationCodeGrant(
          config,
          plain.callback,
          { pkceCodeVerifier: plain.verifier, expectedState: 's' },
          { resource: RESOURCE },
        ),
      ),
      'invalid_target',
      'the code was approved for the client only',
    );

    const again = await authorize();
    const tokens = await client.authorizationCodeGrant(config, again.callback, {
      pkceCodeVerifier: again.verifier,
      expectedState: 's',
    });
    t.equal(decodeJwt(tokens.access_token).aud, registered.client_id);
    t.equal(
      await refusal(client.refreshTokenGrant(config, tokens.refresh_token!, { resource: RESOURCE })),
      'invalid_target',
      'nor its refresh token',
    );
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    t.equal(decodeJwt(refreshed.access_token).aud, registered.client_id, 'the refused refresh left the token working');

    const named = await authorize({ resource: RESOURCE });
    const forResource = await client.authorizationCodeGrant(
      config,
      named.callback,
      { pkceCodeVerifier: named.verifier, expectedState: 's' },
      { resource: RESOURCE },
    );
    t.equal(decodeJwt(forResource.access_token).aud, RESOURCE, 'a resource on the approval page is granted');
  },
);
