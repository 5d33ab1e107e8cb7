import { decideConsent } from '../consent/decide-consent.js';
import type { Approval, AuthorizationRequest } from './authorization-request.js';
import type { InPlaceTransport } from './in-place-transport.js';
import { originsOf } from './redirect-uri.js';

/**
 * In-place sign-in (docs/in-place.md): the popup, FedCM and the direct grant are one capability,
 * turned on by client metadata `in_place: true`, with one origin rule, one CORS rule and one
 * consent rule. Pure: callers pass the client's metadata and the stored approval.
 */

export type { InPlaceTransport } from './in-place-transport.js';

/** What the origin rule needs of a client. */
export interface InPlaceClient {
  redirect_uris: readonly string[];
  in_place?: boolean;
  first_party?: boolean;
}

/** A client's registered origins: the origins of its registered redirect URIs, nothing else. */
export function registeredOriginsOf(client: Pick<InPlaceClient, 'redirect_uris'>): string[] {
  return originsOf(client.redirect_uris);
}

/**
 * Whether `origin` (the request's `Origin` header) is exactly one of the client's registered
 * origins. A missing header and the opaque `null` origin never match.
 */
export function isRegisteredOrigin(
  client: Pick<InPlaceClient, 'redirect_uris'>,
  origin: string | undefined,
): origin is string {
  if (origin === undefined || origin === 'null') return false;
  return registeredOriginsOf(client).includes(origin);
}

/**
 * The registered origins of an in-place client that are published as WebAuthn related origins
 * (`/.well-known/webauthn`) and answered with credentialed CORS (docs/in-place.md#origins). A
 * related origin runs passkey ceremonies for the issuer's RP ID, so an account cannot add one by
 * registering a client: all of them for a client the operator registered or marked first-party;
 * for a client an account registered, only https origins whose host is, or lies under, a domain
 * proved by an org the account administers (`provedDomains`, lower-case host names).
 */
export function publishableOrigins(
  client: InPlaceClient,
  input: { operatorRegistered: boolean; provedDomains: readonly string[] },
): string[] {
  if (client.in_place !== true) return [];
  const origins = registeredOriginsOf(client);
  if (input.operatorRegistered || client.first_party === true) return origins;
  return origins.filter((origin) => {
    const { protocol, hostname } = new URL(origin);
    return (
      protocol === 'https:' &&
      input.provedDomains.some((domain) => hostname === domain || hostname.endsWith(`.${domain}`))
    );
  });
}

export interface CorsOptions {
  /** Methods a preflight allows. */
  methods?: string;
  /** Request headers a preflight allows. */
  headers?: string;
}

/**
 * CORS response headers for a credentialed cross-origin call (Fetch §3.2.5): the exact origin
 * and `Access-Control-Allow-Credentials: true` when `allowed`, else nothing at all, so that the
 * browser hides the answer from any other origin. `Vary: Origin` always, for caches.
 */
export function buildCorsHeaders(
  origin: string | undefined,
  allowed: boolean,
  options: CorsOptions = {},
): Record<string, string> {
  if (!allowed || origin === undefined) return { vary: 'Origin' };
  return {
    vary: 'Origin',
    'access-control-allow-origin': origin,
    'access-control-allow-credentials': 'true',
    ...(options.methods ? { 'access-control-allow-methods': options.methods } : {}),
    ...(options.headers ? { 'access-control-allow-headers': options.headers, 'access-control-max-age': '600' } : {}),
  };
}

export type ConsentDecision =
  | { allowed: true; recordApproval: boolean }
  /** `consent_page`: the popup shows the one-tap page; `refuse`: the transport cannot ask, so it points to the popup. */
  | { allowed: false; next: 'consent_page' | 'refuse' };

/**
 * The one consent rule of every transport, the same as `/auth/authorize`'s (`decideConsent`):
 * an earlier approval covering every requested scope and the requested resource, or a
 * first-party client, signs in without asking. Otherwise the redirect and the popup show the
 * one-tap page; FedCM counts the browser's own disclosure (the account chooser told the person
 * what is shared) as the approval and records it; the direct grant cannot ask and is refused.
 */
export function decideInPlaceConsent(input: {
  transport: InPlaceTransport;
  request: Pick<AuthorizationRequest, 'scopes' | 'resource'>;
  /** What the account approved for this client before, or null. */
  approval: Approval | null;
  firstParty: boolean;
  /** FedCM: the browser reported that it showed its disclosure text. */
  disclosureShown?: boolean;
}): ConsentDecision {
  if (decideConsent({ firstParty: input.firstParty, approval: input.approval, release: input.request }).approved)
    return { allowed: true, recordApproval: false };
  switch (input.transport) {
    case 'redirect':
    case 'popup':
      return { allowed: false, next: 'consent_page' };
    case 'fedcm':
      return input.disclosureShown === true
        ? { allowed: true, recordApproval: true }
        : { allowed: false, next: 'refuse' };
    case 'direct':
      return { allowed: false, next: 'refuse' };
  }
}

/**
 * The popup URL a refused in-place request points to: the same authorization request with
 * `response_mode=web_message`, where sign-in, consent and step-up can happen.
 */
export function buildPopupUrl(
  issuer: string,
  request: {
    clientId: string;
    redirectUri: string;
    codeChallenge: string;
    state?: string;
    nonce?: string;
    scope: string;
  },
): string {
  const url = new URL(`${issuer}/auth/authorize`);
  const params: Record<string, string | undefined> = {
    client_id: request.clientId,
    redirect_uri: request.redirectUri,
    response_type: 'code',
    response_mode: 'web_message',
    scope: request.scope,
    code_challenge: request.codeChallenge,
    code_challenge_method: 'S256',
    state: request.state,
    nonce: request.nonce,
  };
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}
