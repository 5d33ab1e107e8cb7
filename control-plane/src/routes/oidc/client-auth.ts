import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { parseClientSecretBasic, verifyClientSecret } from '../../../../lib/oauth/client-auth.js';
import type { ClientAuthMethod } from '../../../../lib/oauth/client-metadata.js';
import { oauthError } from '../../../../lib/oauth/errors.js';
import { sha256Hex } from '../../../../lib/util/sha256.js';
import type { StoredClient } from '../../storage/types.js';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** A client assertion older than this is refused even when its exp is later (RFC 7523 §3 leaves the bound to the server). */
const ASSERTION_MAX_AGE_SECONDS = 300;

function invalidClient(message: string, basic: boolean) {
  // RFC 6749 §5.2: 401 with a WWW-Authenticate challenge when the client tried the Authorization header.
  return oauthError('invalid_client', message, { status: 401, ...(basic ? { headers: { 'www-authenticate': 'Basic realm="keyplane"' } } : {}) });
}

const remoteSets = new Map<string, JWTVerifyGetKey>();

function keySetOf(client: StoredClient): JWTVerifyGetKey | null {
  if (client.metadata.jwks) return createLocalJWKSet(client.metadata.jwks);
  const uri = client.metadata.jwks_uri;
  if (!uri) return null;
  let set = remoteSets.get(uri);
  if (!set) {
    set = createRemoteJWKSet(new URL(uri), { timeoutDuration: 3000, cooldownDuration: 30_000, cacheMaxAge: 600_000 });
    remoteSets.set(uri, set);
  }
  return set;
}

/**
 * Authenticates the client of a token, revocation or introspection request (RFC 6749 §2.3,
 * OIDC Core §9): exactly one method, and it must be the one registered. `client_secret_basic`,
 * `client_secret_post`, `private_key_jwt` (RFC 7523, with `jti` replay refused) and `none` for
 * public clients, which only identify themselves with `client_id`.
 */
export async function authenticateClient(app: FastifyInstance, request: FastifyRequest, body: Record<string, unknown>): Promise<StoredClient> {
  const authorization = request.headers.authorization;
  const basic = parseClientSecretBasic(authorization);
  if (authorization !== undefined && /^basic /i.test(authorization.trim()) && !basic) throw invalidClient('the Basic credentials are malformed', true);
  const postSecret = body.client_secret;
  const assertion = body.client_assertion;
  const bodyClientId = body.client_id;
  const used = [basic ? 'basic' : null, postSecret !== undefined ? 'post' : null, assertion !== undefined ? 'jwt' : null].filter(Boolean);
  if (used.length > 1) throw oauthError('invalid_request', 'use exactly one client authentication method');
  if (bodyClientId !== undefined && typeof bodyClientId !== 'string') throw oauthError('invalid_request', 'client_id must be a single string');

  let method: ClientAuthMethod;
  let clientId: string | undefined;
  if (basic) {
    method = 'client_secret_basic';
    clientId = basic.clientId;
    if (bodyClientId !== undefined && bodyClientId !== clientId) throw oauthError('invalid_request', 'client_id differs from the authenticated client');
  } else if (postSecret !== undefined) {
    method = 'client_secret_post';
    clientId = bodyClientId as string | undefined;
  } else if (assertion !== undefined) {
    method = 'private_key_jwt';
    if (typeof assertion !== 'string' || body.client_assertion_type !== ASSERTION_TYPE) throw oauthError('invalid_request', `client_assertion must be one JWT with client_assertion_type ${ASSERTION_TYPE}`);
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
  const client = clientId.length <= 100 ? await app.kp.storage.clients.get(clientId) : null;
  if (!client) throw invalidClient('unknown client or wrong credentials', method === 'client_secret_basic');
  if (client.metadata.token_endpoint_auth_method !== method) {
    throw invalidClient(`this client is registered for ${client.metadata.token_endpoint_auth_method}, not ${method}`, method === 'client_secret_basic');
  }
  switch (method) {
    case 'client_secret_basic':
    case 'client_secret_post': {
      const secret = method === 'client_secret_basic' ? basic!.clientSecret : postSecret;
      if (!verifyClientSecret(secret, client.secretHash)) throw invalidClient('unknown client or wrong credentials', method === 'client_secret_basic');
      return client;
    }
    case 'private_key_jwt':
      await verifyClientAssertion(app, client, assertion as string);
      return client;
    case 'none':
      return client;
  }
}

async function verifyClientAssertion(app: FastifyInstance, client: StoredClient, assertion: string): Promise<void> {
  const keys = keySetOf(client);
  if (!keys) throw invalidClient('the client has no registered keys', false);
  const { issuer } = app.kp.config;
  const now = app.kp.now();
  let payload;
  try {
    ({ payload } = await jwtVerify(assertion, keys, {
      issuer: client.clientId,
      subject: client.clientId,
      // RFC 7523 §3: the token endpoint URL; the issuer is accepted too (OIDC Core §9).
      audience: [`${issuer}/auth/token`, issuer, `${issuer}/auth/revoke`, `${issuer}/auth/introspect`],
      algorithms: ['ES256', 'EdDSA', 'PS256', 'RS256'],
      currentDate: new Date(now),
      maxTokenAge: ASSERTION_MAX_AGE_SECONDS,
      requiredClaims: ['exp', 'jti', 'iat'],
    }));
  } catch {
    throw invalidClient('the client assertion does not verify', false);
  }
  const jti = String(payload.jti);
  const fresh = await app.kp.state.setIfAbsent(`oidc:assertion:${client.clientId}:${sha256Hex(jti)}`, '1', ASSERTION_MAX_AGE_SECONDS * 1000 + 60_000);
  if (!fresh) throw invalidClient('the client assertion was used already', false);
}
