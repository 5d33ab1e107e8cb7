import { oauthError } from '#lib/oauth/errors.js';
import { checkResource } from '#lib/oauth/resource.js';
import { formatScope, parseScope } from '#lib/oauth/scope.js';
import type { VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import { randomToken } from '#lib/crypto/random.js';
import { signAccessToken } from '#lib/tokens/sign-token.js';
import { CLIENT_CREDENTIALS_JTI, type ClientAccessTokenClaims } from '#lib/tokens/claims.js';
import { apiAccessFor } from '../../apis/apis.js';
import { grantableSsfScopes } from '../../ssf/streams.js';
import type { StoredClient } from '../../storage/interface.js';
import type { GrantResult, GrantServices } from './grant-records.js';

/** RFC 6749 §4.4. */
export const CLIENT_CREDENTIALS_GRANT = 'client_credentials';

/** The `aud` of a Shared Signals receiver's token: the transmitter's stream management. */
export const ssfAudience = (issuer: string) => `${issuer}/ssf`;

/**
 * The `client_credentials` grant (RFC 6749 §4.4, docs/apis.md#client-credentials): a confidential
 * client gets a token for itself, for one API (`resource`, RFC 8707) that admits it, carrying only
 * that API's scopes (all it admits when `scope` is absent). Never an ID token or refresh token
 * (§4.4.3); never the provider's own scopes, which speak of a person. A Shared Signals receiver
 * asks for `ssf.*` scopes without `resource` (or with the transmitter's, `<issuer>/ssf`), granted
 * only to operator- or org-owned clients that registered them by name
 * (docs/events.md#shared-signals-streams-from-a-receivers-view).
 */
export async function clientCredentialsGrant(
  services: GrantServices,
  client: StoredClient,
  body: Record<string, unknown>,
  proof: VerifiedDpopProof | null,
): Promise<GrantResult> {
  // RFC 6749 §4.4: only a client that can keep a secret acts for itself.
  if (client.type !== 'confidential')
    throw oauthError('unauthorized_client', 'client_credentials is for confidential clients only');
  const ssf = ssfAudience(services.config.issuer);
  if (body.resource === ssf || (body.resource === undefined && parseScope(body.scope).some(isSsfScope)))
    return issue(
      services,
      client,
      ssf,
      grantableSsfScopes(client, parseScope(body.scope)),
      proof,
      'ssf.* scopes go only to operator- or org-owned confidential clients that registered them by name',
    );
  const api = await apiAccessFor(services, client, body.resource);
  if (body.resource === undefined)
    throw oauthError('invalid_target', 'name the API the token is for in resource (RFC 8707)');
  const resource = checkResource(api ? [api.resource] : [], body.resource);
  if (resource === undefined || !api) throw oauthError('invalid_target', 'no API at this resource admits this client');
  const admitted = api.scopes.map((scope) => scope.name);
  const requested = body.scope === undefined ? admitted : parseScope(body.scope);
  // RFC 6749 §3.3: unknown scopes are dropped, as at authorize; nothing left is a refusal.
  return issue(
    services,
    client,
    resource,
    requested.filter((scope) => admitted.includes(scope)),
    proof,
  );
}

const isSsfScope = (scope: string) => scope.startsWith('ssf.');

/** Signs the token for `resource` with `scopes` (none left is `invalid_scope`) and writes its receipt. */
async function issue(
  services: GrantServices,
  client: StoredClient,
  resource: string,
  scopes: string[],
  proof: VerifiedDpopProof | null,
  nothingGrantable = 'ask for at least one scope the API declares and admits this client to',
): Promise<GrantResult> {
  if (scopes.length === 0) throw oauthError('invalid_scope', nothingGrantable);
  const now = services.now();
  const lifetime = services.config.lifetimes.accessToken;
  const claims: ClientAccessTokenClaims = {
    iss: services.config.issuer,
    sub: client.clientId,
    aud: resource,
    iat: Math.floor(now / 1000),
    exp: Math.floor(now / 1000) + lifetime,
    jti: `${CLIENT_CREDENTIALS_JTI}.${randomToken(16)}`,
    client_id: client.clientId,
    scope: formatScope(scopes),
    ...(proof ? { cnf: { jkt: proof.jkt } } : {}),
  };
  const accessToken = await signAccessToken(claims, services.keys.current());
  const { receipt } = await services.storage.transaction((tx) =>
    services.events.record(tx, {
      type: 'token.client_credentials',
      at: now,
      outcome: 'success',
      clientId: client.clientId,
      resource,
      scopes,
    }),
  );
  return { minted: { accessToken, expiresIn: lifetime }, scopes, proof, ...(receipt ? { receipt } : {}) };
}
