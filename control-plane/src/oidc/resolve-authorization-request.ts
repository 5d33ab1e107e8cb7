import type { JWTVerifyGetKey } from 'jose';
import type { RawParams } from '#lib/oauth/authorization-request.js';
import type { OAuthErrorCode } from '#lib/oauth/errors.js';
import { isPushedRequestUri, pushedRequestIdOf } from '#lib/oauth/pushed-request.js';
import { MAX_REQUEST_OBJECT_BYTES, mergeRequestObject, verifyRequestObject } from '#lib/oauth/request-object.js';
import { clientKeySet } from '../clients/remote-key-sets.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/interface.js';

export type ResolveServices = Pick<ControlPlaneServices, 'config' | 'fetcher' | 'now' | 'state'>;

/**
 * Where an authorization request's parameters came from. Each source yields the same plain
 * parameters, which `checkAuthorizationRequest` then checks alike: a pushed request (RFC 9126,
 * `request_uri=urn:ietf:params:oauth:request_uri:…`) is one more source here.
 */
export type AuthorizationSource = 'parameters' | 'request_object' | 'request_uri' | 'pushed';

/** Where the request arrived: the authorization endpoint, or the PAR endpoint (RFC 9126 §2.1). */
export type ResolveAt = 'authorize' | 'par';

export type Resolution =
  | { ok: true; params: RawParams; source: AuthorizationSource }
  | { ok: false; error: OAuthErrorCode; description: string };

const FETCH = { maxBytes: MAX_REQUEST_OBJECT_BYTES, timeoutMs: 3000 };

function refuse(error: OAuthErrorCode, description: string): Resolution {
  return { ok: false, error, description };
}

/**
 * A request_uri must be one the client registered (OIDC Core §6.2; discovery says
 * `require_request_uri_registration`). For a client that registered none, passing by reference is
 * not supported at all (OIDC Core §3.1.2.6 `request_uri_not_supported`); one that registered others
 * sent an invalid one (`invalid_request_uri`). Neither is ever fetched.
 */
async function fetchRequestUri(services: ResolveServices, client: StoredClient, uri: string): Promise<Resolution> {
  const registered = client.metadata.request_uris ?? [];
  if (registered.length === 0)
    return refuse('request_uri_not_supported', 'this client registered no request_uris to pass requests by reference');
  if (!registered.includes(uri))
    return refuse('invalid_request_uri', 'the request_uri is not one of the request_uris registered for this client');
  let body: string;
  try {
    // OIDC Core §6.2: the fragment (a hash of the content) is not sent.
    const fetched = await services.fetcher.fetch(uri.split('#')[0]!, {
      ...FETCH,
      accept: 'application/oauth-authz-req+jwt, application/jwt',
      followRedirects: false,
    });
    if (fetched.status !== 200) return refuse('invalid_request_uri', `the request_uri answered ${fetched.status}`);
    body = fetched.body.toString('utf8').trim();
  } catch {
    return refuse('invalid_request_uri', 'the request_uri could not be fetched');
  }
  return { ok: true, params: { request: body }, source: 'request_uri' };
}

/**
 * Turns what arrived at the authorization endpoint into plain parameters: as they came, or from a
 * signed request object sent by value (`request`) or by reference (`request_uri`), verified with
 * the client's registered keys and combined with the plain parameters (OIDC Core §6.3). A client
 * registered with `require_signed_request_object` sends nothing else (RFC 9101 §10.5).
 */
export async function resolveAuthorizationRequest(
  services: ResolveServices,
  client: StoredClient,
  outer: RawParams,
  at: ResolveAt = 'authorize',
): Promise<Resolution> {
  const byReference = outer.request_uri;
  if (typeof byReference === 'string' && isPushedRequestUri(byReference))
    return redeemPushedRequest(services, client, byReference);
  // RFC 9126 §5: a client registered with require_pushed_authorization_requests sends nothing else;
  // nor does a FAPI 2.0 client (FAPI 2.0 SP §5.3.2.2), whatever its stored flag says.
  const mustPush =
    client.metadata.require_pushed_authorization_requests === true || client.metadata.fapi_profile !== undefined;
  if (at === 'authorize' && mustPush)
    return refuse('invalid_request', 'this client must push its authorization requests to the PAR endpoint first');
  const byValue = outer.request;
  if (byValue === undefined && byReference === undefined) {
    if (client.metadata.require_signed_request_object === true)
      return refuse('invalid_request', 'this client must send its requests as signed request objects');
    return { ok: true, params: outer, source: 'parameters' };
  }
  if (byValue !== undefined && byReference !== undefined)
    return refuse('invalid_request', 'send request or request_uri, not both');
  if (byReference !== undefined && typeof byReference !== 'string')
    return refuse('invalid_request', 'request_uri must be sent once');
  if (byValue !== undefined && typeof byValue !== 'string')
    return refuse('invalid_request', 'request must be sent once');

  let source: AuthorizationSource = 'request_object';
  let jwt = byValue as string | undefined;
  if (byReference !== undefined) {
    const fetched = await fetchRequestUri(services, client, byReference as string);
    if (!fetched.ok) return fetched;
    source = fetched.source;
    jwt = fetched.params.request as string;
  }
  let keys: JWTVerifyGetKey | null;
  try {
    keys = await clientKeySet(services, client);
  } catch {
    return refuse('invalid_request_object', "the client's key set could not be fetched");
  }
  // OIDC Core §3.1.2.6: a client without keys cannot sign request objects, so for it they are not supported.
  if (!keys)
    return byReference !== undefined
      ? refuse('request_uri_not_supported', 'this client registered no keys (jwks or jwks_uri) to sign request objects')
      : refuse('request_not_supported', 'this client registered no keys (jwks or jwks_uri) to sign request objects');
  const verify = (with_: JWTVerifyGetKey) =>
    verifyRequestObject(jwt!, {
      clientId: client.clientId,
      issuer: services.config.issuer,
      now: services.now(),
      keys: with_,
      ...(client.metadata.request_object_signing_alg ? { signingAlg: client.metadata.request_object_signing_alg } : {}),
    });
  let verified = await verify(keys);
  if (!verified.ok && client.metadata.jwks_uri !== undefined) {
    // The client may have rotated to a key the cached set lacks: its jwks_uri is read again
    // (at most once per cooldown, docs/fetch.md).
    const fresh = await clientKeySet(services, client, true).catch(() => null);
    if (fresh) verified = await verify(fresh);
  }
  if (!verified.ok) return verified;
  const merged = mergeRequestObject(outer, verified.params);
  return merged.ok ? { ok: true, params: merged.params, source } : merged;
}

/** The state key of a pushed request (shared state: one use across replicas). */
export function pushedRequestKey(id: string): string {
  return `oidc:par:${id}`;
}

/**
 * RFC 9126 §4: the pushed request a `request_uri` stands for, taken once (a second use finds
 * nothing), for the client that pushed it only. Every other parameter of the authorization
 * request but `client_id` is ignored: the pushed ones are the request.
 */
async function redeemPushedRequest(services: ResolveServices, client: StoredClient, uri: string): Promise<Resolution> {
  const id = pushedRequestIdOf(uri);
  const stored = id ? await services.state.take(pushedRequestKey(id)) : null;
  if (!stored) return refuse('invalid_request_uri', 'the request_uri is unknown, expired or was used already');
  const pushed = JSON.parse(stored) as { clientId: string; params: RawParams };
  if (pushed.clientId !== client.clientId)
    return refuse('invalid_request_uri', 'the request_uri was pushed by another client');
  return { ok: true, params: pushed.params, source: 'pushed' };
}
