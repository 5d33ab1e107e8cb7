import { decodeJwt, type JWTVerifyGetKey } from 'jose';
import { checkJwt } from '#lib/crypto/jwt.js';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { parseClientSecretBasic, verifyClientSecret } from '#lib/oauth/client-auth.js';
import type { ClientAuthMethod } from '#lib/oauth/client-metadata.js';
import { CLIENT_SIGNING_ALGS } from '#lib/oauth/oidc-client-metadata.js';
import { FAPI_SIGNING_ALGS } from '#lib/oauth/fapi.js';
import { oauthError } from '#lib/oauth/errors.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { resolveClient } from './client-id-documents.js';
import { clientKeySet } from './remote-key-sets.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/interface.js';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** A client assertion older than this is refused even when its exp is later (RFC 7523 §3 leaves the bound to the server). */
const ASSERTION_MAX_AGE_SECONDS = 300;
/**
 * FAPI 2.0 §5.3.2.1 (note on clock skew): accept `iat`/`nbf` up to 10 s in the future, refuse
 * more than 60 s; Keyplane's limit for a FAPI client is the 10 s tolerance.
 */
const FAPI_CLOCK_SKEW_SECONDS = 10;

function invalidClient(message: string, basic: boolean) {
  // RFC 6749 §5.2: 401 with a WWW-Authenticate challenge when the client tried the Authorization header.
  return oauthError('invalid_client', message, {
    status: 401,
    ...(basic ? { headers: { 'www-authenticate': 'Basic realm="keyplane"' } } : {}),
  });
}

/** The client's registered keys; a `jwks_uri` that cannot be fetched fails the authentication. */
async function keySetOf(
  services: ControlPlaneServices,
  client: StoredClient,
  refresh: boolean,
): Promise<JWTVerifyGetKey | null> {
  try {
    return await clientKeySet(services, client, refresh);
  } catch {
    throw invalidClient("the client's key set could not be fetched", false);
  }
}

/**
 * Authenticates the client of a token, revocation or introspection request (RFC 6749 §2.3,
 * OIDC Core §9): exactly one method, and it must be the one registered. `client_secret_basic`,
 * `client_secret_post`, `private_key_jwt` (RFC 7523, with `jti` replay refused) and `none` for
 * public clients, which only identify themselves with `client_id`.
 */
export async function authenticateClient(
  services: ControlPlaneServices,
  authorization: string | undefined,
  body: Record<string, unknown>,
): Promise<StoredClient> {
  const basic = parseClientSecretBasic(authorization);
  if (authorization !== undefined && /^basic /i.test(authorization.trim()) && !basic)
    throw invalidClient('the Basic credentials are malformed', true);
  const postSecret = body.client_secret;
  const assertion = body.client_assertion;
  const bodyClientId = body.client_id;
  const used = [
    basic ? 'basic' : null,
    postSecret !== undefined ? 'post' : null,
    assertion !== undefined ? 'jwt' : null,
  ].filter(Boolean);
  if (used.length > 1) throw oauthError('invalid_request', 'use exactly one client authentication method');
  if (bodyClientId !== undefined && typeof bodyClientId !== 'string')
    throw oauthError('invalid_request', 'client_id must be a single string');

  let method: ClientAuthMethod;
  let clientId: string | undefined;
  if (basic) {
    method = 'client_secret_basic';
    clientId = basic.clientId;
    if (bodyClientId !== undefined && bodyClientId !== clientId)
      throw oauthError('invalid_request', 'client_id differs from the authenticated client');
  } else if (postSecret !== undefined) {
    method = 'client_secret_post';
    clientId = bodyClientId as string | undefined;
  } else if (assertion !== undefined) {
    method = 'private_key_jwt';
    if (typeof assertion !== 'string' || body.client_assertion_type !== ASSERTION_TYPE)
      throw oauthError(
        'invalid_request',
        `client_assertion must be one JWT with client_assertion_type ${ASSERTION_TYPE}`,
      );
    try {
      const sub = decodeJwt(assertion).sub;
      clientId = typeof bodyClientId === 'string' ? bodyClientId : typeof sub === 'string' ? sub : undefined;
    } catch {
      throw invalidClient('the client assertion is not a JWT', false);
    }
  } else {
    method = 'none';
    clientId = bodyClientId as string | undefined;
  }
  if (!clientId) throw invalidClient('client authentication is required', false);
  // A Client ID Metadata Document that cannot be used is refused here with its own message.
  const client = await resolveClient(services, clientId);
  if (!client) throw invalidClient('unknown client or wrong credentials', method === 'client_secret_basic');
  if (client.metadata.token_endpoint_auth_method !== method) {
    throw invalidClient(
      `this client is registered for ${client.metadata.token_endpoint_auth_method}, not ${method}`,
      method === 'client_secret_basic',
    );
  }
  switch (method) {
    case 'client_secret_basic':
    case 'client_secret_post': {
      const secret = method === 'client_secret_basic' ? basic!.clientSecret : postSecret;
      if (!verifyClientSecret(secret, client.secretHash))
        throw invalidClient('unknown client or wrong credentials', method === 'client_secret_basic');
      return client;
    }
    case 'private_key_jwt':
      await verifyClientAssertion(services, client, assertion as string);
      return client;
    case 'none':
      return client;
  }
}

function rethrowUnverified(error: unknown): never {
  if (isKeyplaneError(error)) throw error;
  throw invalidClient('the client assertion does not verify', false);
}

async function verifyClientAssertion(
  services: ControlPlaneServices,
  client: StoredClient,
  assertion: string,
): Promise<void> {
  const { issuer } = services.config;
  const now = services.now();
  const verify = async (refresh: boolean) => {
    const keys = await keySetOf(services, client, refresh);
    if (!keys) throw invalidClient('the client has no registered keys', false);
    return checkJwt(assertion, keys, {
      issuer: client.clientId,
      subject: client.clientId,
      // RFC 7523 §3: the token endpoint URL; the issuer is accepted too (OIDC Core §9). FAPI 2.0
      // §5.3.2.1 item 8: for a FAPI client the issuer alone.
      audience: client.metadata.fapi_profile
        ? issuer
        : [
            `${issuer}/auth/token`,
            issuer,
            `${issuer}/auth/revoke`,
            `${issuer}/auth/introspect`,
            `${issuer}/auth/par`,
            `${issuer}/auth/device`,
          ],
      // OIDC Registration §2: a registered token_endpoint_auth_signing_alg is the only one accepted.
      algorithms: client.metadata.token_endpoint_auth_signing_alg
        ? [client.metadata.token_endpoint_auth_signing_alg]
        : client.metadata.fapi_profile
          ? [...FAPI_SIGNING_ALGS]
          : [...CLIENT_SIGNING_ALGS],
      now,
      maxTokenAgeSeconds: ASSERTION_MAX_AGE_SECONDS,
      ...(client.metadata.fapi_profile ? { clockToleranceSeconds: FAPI_CLOCK_SKEW_SECONDS } : {}),
      requiredClaims: ['exp', 'jti', 'iat'],
    });
  };
  let payload;
  try {
    ({ payload } = await verify(false));
  } catch (error) {
    // A key the cached set lacks: the client may have rotated, so its jwks_uri is read again once.
    const rotated =
      (error as { code?: unknown }).code === 'ERR_JWKS_NO_MATCHING_KEY' && client.metadata.jwks_uri !== undefined;
    if (!rotated) rethrowUnverified(error);
    try {
      ({ payload } = await verify(true));
    } catch (again) {
      rethrowUnverified(again);
    }
  }
  // FAPI 2.0 §5.3.2.1 item 8: the issuer "as a string", not inside a list.
  if (client.metadata.fapi_profile && typeof payload.aud !== 'string')
    throw invalidClient('the client assertion aud must be the issuer, as a string', false);
  // FAPI 2.0: a short-lived assertion; one valid for longer than its greatest age is refused.
  if (
    client.metadata.fapi_profile &&
    (payload.exp as number) - now / 1000 > ASSERTION_MAX_AGE_SECONDS + FAPI_CLOCK_SKEW_SECONDS
  )
    throw invalidClient('the client assertion must expire within 5 minutes', false);
  const jti = String(payload.jti);
  const fresh = await services.state.setIfAbsent(
    `oidc:assertion:${client.clientId}:${sha256Hex(jti)}`,
    '1',
    ASSERTION_MAX_AGE_SECONDS * 1000 + 60_000,
  );
  if (!fresh) throw invalidClient('the client assertion was used already', false);
}
