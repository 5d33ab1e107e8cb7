import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { readAccessToken } from '#lib/oauth/access-token-header.js';
import { parseScope } from '#lib/oauth/scope.js';
import { CLIENT_CREDENTIALS_JTI } from '#lib/tokens/claims.js';
import { ssfAudience } from '../oidc/grants/client-credentials.js';
import { grantIdOfJti, verifyAccessToken, type TokenServices } from '../oidc/tokens.js';
import type { StoredClient } from '../storage/interface.js';
import type { SsfStreamServices } from './streams.js';

/** RFC 6750 §3: a refusal with its challenge. */
function refusal(reason: 'unauthorized' | 'invalid_token' | 'insufficient_scope', description: string) {
  const challenge =
    reason === 'unauthorized' ? 'Bearer' : `Bearer error="${reason}", error_description="${description}"`;
  return fail(reason, description, { headers: { 'www-authenticate': challenge } });
}

/**
 * The receiver behind a stream-management or poll request: a client-credentials access token of
 * the receiver's client, for the transmitter (`aud`), with `ssf.manage`, or for a read `ssf.read`
 * (docs/events.md#shared-signals-streams-from-a-receivers-view).
 */
export async function authorizeReceiver(
  services: SsfStreamServices & TokenServices,
  authorization: string | undefined,
  access: 'manage' | 'read',
): Promise<StoredClient> {
  const presented = readAccessToken(authorization);
  if (!presented || presented.scheme !== 'Bearer')
    throw refusal('unauthorized', 'send a client-credentials access token as Authorization: Bearer');
  let claims;
  try {
    claims = await verifyAccessToken(services, presented.token);
  } catch (error) {
    if (isKeyplaneError(error)) throw refusal('invalid_token', error.message);
    throw error;
  }
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (grantIdOfJti(claims.jti) !== CLIENT_CREDENTIALS_JTI || !aud.includes(ssfAudience(services.config.issuer)))
    throw refusal('invalid_token', 'this access token is not a receiver token for this transmitter');
  // RFC 9449: a DPoP-bound token is not accepted here as a bearer token.
  if (claims.cnf?.jkt !== undefined) throw refusal('invalid_token', 'this transmitter takes Bearer tokens only');
  const scopes = parseScope(claims.scope);
  if (!scopes.includes('ssf.manage') && !(access === 'read' && scopes.includes('ssf.read')))
    throw refusal('insufficient_scope', access === 'read' ? 'needs ssf.read or ssf.manage' : 'needs ssf.manage');
  const client = await services.storage.clients.get(claims.client_id);
  if (!client) throw refusal('invalid_token', 'the client is gone');
  return client;
}
