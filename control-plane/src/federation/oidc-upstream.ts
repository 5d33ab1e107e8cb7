import * as oidc from 'openid-client';
import { exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { fail, isKeyplaneError, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import { randomId } from '#lib/crypto/random.js';
import { checkTenant, upstreamSubject } from '#lib/federation/upstream-identity.js';
import type { ControlPlaneServices } from '../context.js';
import type { OidcConnectionSettings, StoredConnection } from '../storage/interface.js';
import { fetchPolicyFor } from '../webhooks/outbox.js';

/**
 * Keyplane as an OIDC relying party of a connection's upstream (docs/federation.md#oidc-connections),
 * through openid-client: discovery, the authorization URL with PKCE S256, `state` and `nonce`, and
 * the code exchange that verifies the ID token against the upstream's JWKS (an unknown `kid`
 * fetches the set again) and RFC 9207 `iss`. Every request goes through the guarded fetcher.
 */

export type UpstreamServices = Pick<ControlPlaneServices, 'config' | 'fetcher' | 'secrets'>;

/** How long a discovered configuration (and the JWKS cache openid-client keeps on it) is reused. */
const CONFIGURATION_TTL_MS = 10 * 60_000;
const UPSTREAM_TIMEOUT_MS = 10_000;

/** The secret of a connection is sealed for that connection alone. */
export const connectionSecretContext = (connectionId: string) => `keyplane:connection-secret:${connectionId}`;

export function oidcSettings(connection: StoredConnection): OidcConnectionSettings {
  return connection.settings as unknown as OidcConnectionSettings;
}

/**
 * The origin a form that starts a round trip ends at (CSP form-action of its page): the issuer's,
 * where the upstreams we know serve their authorization endpoint too.
 */
export function upstreamOrigin(connection: StoredConnection): string {
  return new URL(oidcSettings(connection).issuer).origin;
}

export function callbackUrl(issuer: string, connectionId: string): string {
  return `${issuer}/federation/${connectionId}/callback`;
}

/** Where the upstream sends the browser back after its logout (RP-Initiated Logout 1.0), to register upstream. */
export function postLogoutRedirectUrl(issuer: string, connectionId: string): string {
  return `${issuer}/federation/${connectionId}/logged-out`;
}

/** Where the upstream posts its logout tokens (Back-Channel Logout 1.0), to register upstream. */
export function backchannelLogoutUrl(issuer: string, connectionId: string): string {
  return `${issuer}/federation/${connectionId}/backchannel-logout`;
}

export function jwksUrl(issuer: string, connectionId: string): string {
  return `${issuer}/federation/${connectionId}/jwks`;
}

/** A private_key_jwt key for one connection: the private JWK (to seal) and the public one (to publish). */
export async function generateConnectionKey(): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = randomId('cky');
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'ES256' };
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  return { privateJwk, publicJwk };
}

/** openid-client's requests, made by the guarded fetcher (an org's issuer is a URL a person gave). */
function guardedFetch(services: UpstreamServices, orgId: string | null): oidc.CustomFetch {
  return async (url, options) => {
    const headers: Record<string, string> = {};
    let clientAuthorization: string | undefined;
    for (const [name, value] of Object.entries(options.headers)) {
      if (name.toLowerCase() === 'authorization') clientAuthorization = value;
      else headers[name] = value;
    }
    const fetched = await services.fetcher.fetch(url, {
      ...fetchPolicyFor(services.config, orgId, url),
      method: options.method === 'POST' ? 'POST' : 'GET',
      ...(options.body !== undefined && options.body !== null ? { body: String(options.body) } : {}),
      headers,
      ...(clientAuthorization !== undefined ? { destinationAuthorization: clientAuthorization } : {}),
      accept: headers['accept'] ?? 'application/json',
      // A token request (it carries the client's credential) is never followed elsewhere.
      followRedirects: options.redirect !== 'manual' && options.method !== 'POST',
      timeoutMs: UPSTREAM_TIMEOUT_MS,
    });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(fetched.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one);
    }
    const empty = fetched.status === 204 || fetched.status === 304;
    return new Response(empty ? null : new Uint8Array(fetched.body), {
      status: fetched.status,
      headers: responseHeaders,
    });
  };
}

async function clientAuthentication(
  services: UpstreamServices,
  connection: StoredConnection,
): Promise<oidc.ClientAuth> {
  const settings = oidcSettings(connection);
  const secret =
    connection.secretSealed === null
      ? undefined
      : services.secrets.open(connectionSecretContext(connection.connectionId), connection.secretSealed).toString();
  if (settings.tokenEndpointAuthMethod === 'private_key_jwt') {
    if (secret === undefined) throw fail('invalid_request', 'this connection has no private key');
    const jwk = JSON.parse(secret) as JWK;
    const key = (await importJWK(jwk, 'ES256')) as oidc.CryptoKey;
    // RFC 7523 via oauth4webapi: `aud` is the upstream's issuer identifier, as a string.
    return oidc.PrivateKeyJwt({ key, kid: jwk.kid! });
  }
  return oidc.ClientSecretBasic(secret);
}

const configurations = new WeakMap<object, Map<string, { at: number; config: oidc.Configuration }>>();

/**
 * The upstream's discovered configuration for this connection, reused for ten minutes (and
 * discovered again after the connection changed). `discovery` refuses a document whose `issuer`
 * is not the configured one.
 */
export async function upstreamConfiguration(
  services: UpstreamServices,
  connection: StoredConnection,
  now: number,
): Promise<oidc.Configuration> {
  let cache = configurations.get(services);
  if (!cache) configurations.set(services, (cache = new Map()));
  const key = `${connection.connectionId}:${connection.updatedAt}`;
  const cached = cache.get(key);
  if (cached && now - cached.at < CONFIGURATION_TTL_MS) return cached.config;
  const config = await discover(services, connection, oidcSettings(connection));
  cache.set(key, { at: now, config });
  return config;
}

/** Discovery from the issuer (at creation too, before the connection is stored). */
export async function discover(
  services: UpstreamServices,
  connection: StoredConnection,
  settings: OidcConnectionSettings,
): Promise<oidc.Configuration> {
  const auth = await clientAuthentication(services, connection);
  try {
    return await oidc.discovery(
      new URL(settings.issuer),
      settings.clientId,
      {
        redirect_uris: [callbackUrl(services.config.issuer, connection.connectionId)],
        token_endpoint_auth_method: settings.tokenEndpointAuthMethod,
      },
      auth,
      {
        [oidc.customFetch]: guardedFetch(services, connection.orgId),
        timeout: UPSTREAM_TIMEOUT_MS / 1000,
        // openid-client leaves the ID token's signature unchecked by default (TLS to the token
        // endpoint names the issuer, OIDC Core §3.1.3.7 step 6); docs/federation.md promises it is
        // checked against the upstream's JWKS, so that a token endpoint behind a broken TLS
        // setup or a key the upstream no longer lists cannot sign anyone in.
        execute: [oidc.enableNonRepudiationChecks],
      },
    );
  } catch (error) {
    throw upstreamFailure(error, 'discovery');
  }
}

/** What the start of a sign-in keeps in shared state until the upstream sends the browser back. */
export interface UpstreamChecks {
  codeVerifier: string;
  state: string;
  nonce: string;
}

/** The upstream's authorization URL: code flow, PKCE S256, `state`, `nonce`, and `hd` for a pinned Google Workspace. */
export async function authorizationUrl(
  services: UpstreamServices,
  connection: StoredConnection,
  config: oidc.Configuration,
  extra: Record<string, string> = {},
): Promise<{ url: string; checks: UpstreamChecks }> {
  const settings = oidcSettings(connection);
  const checks = { codeVerifier: oidc.randomPKCECodeVerifier(), state: oidc.randomState(), nonce: oidc.randomNonce() };
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: callbackUrl(services.config.issuer, connection.connectionId),
    scope: settings.scopes.join(' '),
    response_type: 'code',
    code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
    code_challenge_method: 'S256',
    state: checks.state,
    nonce: checks.nonce,
    ...(settings.tenant?.hd !== undefined ? { hd: settings.tenant.hd } : {}),
    ...extra,
  });
  return { url: url.href, checks };
}

/** The verified outcome of a callback: the ID token's claims and the upstream subject. */
export interface UpstreamIdentity {
  claims: Record<string, unknown>;
  subject: string;
  /** The ID token itself: the upstream's `id_token_hint` at sign-out. */
  idToken: string | undefined;
}

/**
 * The callback: the code exchanged (PKCE verifier, client authentication), the ID token verified
 * (signature against the JWKS, `iss`, `aud`, `exp`, `nonce`) and the authorization response's
 * RFC 9207 `iss` compared when sent; then the tenant pin and the subject.
 */
export async function finishUpstream(
  services: UpstreamServices,
  connection: StoredConnection,
  config: oidc.Configuration,
  callback: URL,
  checks: UpstreamChecks,
): Promise<UpstreamIdentity> {
  const settings = oidcSettings(connection);
  let claims: Record<string, unknown>;
  let idToken: string | undefined;
  try {
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: checks.codeVerifier,
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      idTokenExpected: true,
    });
    claims = { ...(tokens.claims() ?? {}) };
    idToken = tokens.id_token;
    // Most providers put scope claims (email, name) in userinfo rather than the ID token (OIDC
    // Core §5.4): read them there, for the ID token's own subject, never over the token's claims.
    if (claims.email === undefined && config.serverMetadata().userinfo_endpoint !== undefined) {
      const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub as string);
      for (const name of ['email', 'email_verified', 'name', 'preferred_username'])
        if (claims[name] === undefined && info[name] !== undefined) claims[name] = info[name];
    }
  } catch (error) {
    throw upstreamFailure(error, 'callback');
  }
  const tenant = checkTenant(claims, settings.tenant);
  if (!tenant.ok) throw fail('upstream_response_invalid', tenant.refusal);
  const subject = upstreamSubject(config.serverMetadata().issuer, claims);
  if (subject === null) throw fail('upstream_response_invalid', 'the ID token names no subject');
  return { claims, subject, idToken };
}

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e: unknown = error; e !== undefined && e !== null && chain.length < 5; e = (e as { cause?: unknown }).cause)
    chain.push(e);
  return chain;
}

/**
 * What went wrong upstream, as a reason: the upstream's own `error=` (`upstream_error`), an
 * unreachable or failing upstream (`upstream_unreachable`), anything that did not verify
 * (`upstream_response_invalid`). The upstream's words are never shown: only its error code.
 */
export function upstreamFailure(error: unknown, step: 'discovery' | 'callback'): KeyplaneError {
  const chain = causes(error);
  const fetchRefusal = chain.find((e) => isKeyplaneError(e) && e.reason.startsWith('fetch_')) as
    KeyplaneError | undefined;
  if (fetchRefusal)
    return fail('upstream_unreachable', `the identity provider could not be reached (${fetchRefusal.reason})`);
  const first = chain[0];
  if (first instanceof oidc.AuthorizationResponseError) {
    const code = /^[\w.-]{1,64}$/.test(first.error) ? first.error : 'error';
    return fail('upstream_error', `the identity provider answered ${code}`, { fields: { error: code } });
  }
  if (first instanceof oidc.ResponseBodyError) {
    const code = /^[\w.-]{1,64}$/.test(first.error) ? first.error : 'error';
    return fail('upstream_response_invalid', `the identity provider's token endpoint answered ${code}`);
  }
  if (step === 'discovery')
    return fail(
      'upstream_unreachable',
      "the identity provider's discovery document could not be read or did not match",
    );
  const code = (first as { code?: unknown }).code;
  const message = (first as Error | undefined)?.message ?? '';
  // Network failures openid-client reports under its own codes.
  if (typeof code === 'string' && /^(ETIMEDOUT|ECONNREFUSED|ECONNRESET|ENOTFOUND)$/.test(code))
    return fail('upstream_unreachable', 'the identity provider could not be reached');
  return fail('upstream_response_invalid', `the identity provider's answer did not verify (${describe(message)})`);
}

/** A short, safe description of a verification failure (openid-client's messages name the check). */
function describe(message: string): string {
  const clean = message.replace(/[^\w ."'(),:-]/g, '').slice(0, 120);
  return clean || 'unknown check';
}
