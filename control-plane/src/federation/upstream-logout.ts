import * as oidc from 'openid-client';
import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { randomToken } from '#lib/crypto/random.js';
import { checkJwt } from '#lib/crypto/jwt.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { checkLogoutTokenClaims } from '#lib/federation/logout-token.js';
import type { UpstreamSession } from '../storage/interface.js';
import { endGrantsOfSessions } from '../grants/end-grants.js';
import { fetchPolicyFor } from '../webhooks/outbox.js';
import type { ControlPlaneServices } from '../context.js';
import { subjectHash } from './subject-hash.js';
import { oidcSettings, postLogoutRedirectUrl, upstreamConfiguration } from './oidc-upstream.js';
import { samlLogoutRedirect, type SamlUpstreamSubject } from './saml-upstream.js';

/**
 * Logout both ways with a connection's upstream (docs/federation.md#signing-out): a sign-out of a
 * federated session sends the browser on to the upstream's `end_session_endpoint` (OpenID Connect
 * RP-Initiated Logout 1.0) and back; an upstream's back-channel logout token (OpenID Connect
 * Back-Channel Logout 1.0) ends the sessions its upstream session started.
 */

/** A continuation and a logout token's `jti` are kept this long. */
type FederationServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'events' | 'secrets' | 'fetcher' | 'now'
>;

const LOGOUT_TTL_MS = 10 * 60_000;
/** A logout token older than this is refused (§2.6 lets the RP bound `iat`); its `jti` is kept as long. */
const LOGOUT_TOKEN_MAX_AGE_S = 600;
const JWKS_TIMEOUT_MS = 10_000;
const ASYMMETRIC = /^(RS|PS|ES)(256|384|512)$|^EdDSA$|^ES256K$/;

const continuationKey = (id: string) => `fed:logout:${sha256Hex(id)}`;
const jtiKey = (connectionId: string, jti: string) => `fed:logout-jti:${sha256Hex(`${connectionId}\n${jti}`)}`;
const idTokenContext = (connectionId: string) => `keyplane:upstream-id-token:${connectionId}`;

/**
 * What a federated session keeps of its upstream session: keyed hashes of the ID token's `sid`
 * and `sub` (what a logout token names) and the ID token sealed for this connection (the
 * upstream's `id_token_hint`).
 */
export function upstreamSessionOf(
  services: Pick<FederationServices, 'secrets'>,
  connectionId: string,
  claims: Record<string, unknown>,
  idToken: string | undefined,
): UpstreamSession {
  const hash = (value: unknown, kind: string) =>
    typeof value === 'string' && value !== '' ? subjectHash(services, connectionId, `${kind}\n${value}`) : null;
  return {
    sidHash: hash(claims.sid, 'sid'),
    subHash: hash(claims.sub, 'sub'),
    idTokenSealed: idToken === undefined ? null : services.secrets.seal(idTokenContext(connectionId), idToken),
  };
}

/** What a sign-out shows once the upstream sent the browser back: a redirect, or the signed-out page's view. */
export interface LogoutContinuation {
  redirect?: string;
  view?: { next?: { href: string; label: string; auto: boolean }; frontchannel?: string[] };
}

/** The upstream session of a session, read before the session ends. */
export type UpstreamLogout = { connectionId: string; idToken: string };

export async function upstreamLogoutOf(
  services: FederationServices,
  sessionId: string,
): Promise<UpstreamLogout | null> {
  const upstream = await services.storage.connections.sessionUpstream(sessionId);
  if (upstream?.idTokenSealed == null) return null;
  const idToken = services.secrets.open(idTokenContext(upstream.connectionId), upstream.idTokenSealed).toString();
  return { connectionId: upstream.connectionId, idToken };
}

/**
 * The upstream's end-session URL for a session that ended (id_token_hint, post_logout_redirect_uri
 * back to this connection, `state` naming where to go then), or null when the upstream has none or
 * cannot be reached: a sign-out here never waits on, or fails with, the upstream.
 */
export async function upstreamLogoutUrl(
  services: FederationServices,
  logout: UpstreamLogout,
  then: LogoutContinuation,
): Promise<string | null> {
  const connection = await services.storage.connections.get(logout.connectionId);
  if (!connection) return null;
  if (connection.type === 'saml') {
    // SAML Single Logout (saml-profiles-2.0 §4.4): a LogoutRequest by HTTP-Redirect; the IdP's
    // LogoutResponse comes back to `…/saml/slo` with the RelayState naming where to go then.
    const relayState = randomToken(24);
    const subject = JSON.parse(logout.idToken) as SamlUpstreamSubject;
    const url = await samlLogoutRedirect(services, connection, subject, relayState);
    if (url !== null)
      await services.state.set(
        continuationKey(relayState),
        JSON.stringify({ connectionId: logout.connectionId, then }),
        LOGOUT_TTL_MS,
      );
    return url;
  }
  let config: oidc.Configuration;
  try {
    config = await upstreamConfiguration(services, connection, services.now());
  } catch (error) {
    if (isKeyplaneError(error)) return null;
    throw error;
  }
  if (config.serverMetadata().end_session_endpoint === undefined) return null;
  const state = randomToken(24);
  await services.state.set(
    continuationKey(state),
    JSON.stringify({ connectionId: logout.connectionId, then }),
    LOGOUT_TTL_MS,
  );
  return oidc.buildEndSessionUrl(config, {
    id_token_hint: logout.idToken,
    post_logout_redirect_uri: postLogoutRedirectUrl(services.config.issuer, logout.connectionId),
    state,
  }).href;
}

/** `GET /federation/{connectionId}/logged-out`: the continuation the state names, once; null when none. */
export async function continueAfterUpstreamLogout(
  services: FederationServices,
  connectionId: string,
  state: string | undefined,
): Promise<LogoutContinuation | null> {
  if (state === undefined || state.length > 64) return null;
  const raw = await services.state.take(continuationKey(state));
  if (raw === null) return null;
  const stored = JSON.parse(raw) as { connectionId: string; then: LogoutContinuation };
  return stored.connectionId === connectionId ? stored.then : null;
}

/** The upstream's keys, read through the guarded fetcher (logout tokens are rare: no cache to keep fresh). */
async function upstreamKeys(services: FederationServices, orgId: string | null, jwksUri: string) {
  const fetched = await services.fetcher.fetch(jwksUri, {
    ...fetchPolicyFor(services.config, orgId, jwksUri),
    accept: 'application/json',
    timeoutMs: JWKS_TIMEOUT_MS,
  });
  if (fetched.status !== 200) throw fail('upstream_unreachable', "the identity provider's keys could not be read");
  try {
    return createLocalJWKSet(JSON.parse(fetched.body.toString('utf8')) as JSONWebKeySet);
  } catch {
    throw fail('upstream_unreachable', "the identity provider's keys could not be read");
  }
}

const refused = (message: string) => fail('invalid_request', message);

/**
 * `POST /federation/{connectionId}/backchannel-logout` (Back-Channel Logout 1.0 §2.6): the logout
 * token verified against the upstream's JWKS (an asymmetric algorithm it announces), `iss` its
 * issuer, `aud` this connection's client id, `iat` within ten minutes, the event, no `nonce`, `sid`
 * or `sub`, and its `jti` taken once; then every session that upstream session started ends, with
 * back-channel logout onward to the apps that got tokens in it. Answers how many ended.
 */
export async function acceptBackchannelLogout(
  services: FederationServices,
  connectionId: string,
  logoutToken: string,
): Promise<{ ended: number }> {
  const connection = await services.storage.connections.get(connectionId);
  if (!connection || connection.type !== 'oidc') throw fail('not_found', 'no such connection');
  const settings = oidcSettings(connection);
  const metadata = (await upstreamConfiguration(services, connection, services.now())).serverMetadata();
  if (metadata.jwks_uri === undefined) throw refused('the identity provider publishes no keys');
  const announced = metadata.id_token_signing_alg_values_supported ?? ['RS256'];
  const algorithms = announced.filter((alg) => ASYMMETRIC.test(alg));
  let verified: Awaited<ReturnType<typeof checkJwt>>;
  try {
    verified = await checkJwt(logoutToken, await upstreamKeys(services, connection.orgId, metadata.jwks_uri), {
      algorithms,
      issuer: metadata.issuer,
      audience: settings.clientId,
      requiredClaims: ['iat'],
      maxTokenAgeSeconds: LOGOUT_TOKEN_MAX_AGE_S,
      now: services.now(),
    });
  } catch (error) {
    if (isKeyplaneError(error)) throw error;
    const code = (error as { code?: unknown }).code;
    throw refused(`the logout token did not verify (${typeof code === 'string' ? code : 'malformed'})`);
  }
  const checked = checkLogoutTokenClaims(verified.payload, verified.header);
  if (!checked.ok) throw refused(checked.refusal);
  if (!(await services.state.setIfAbsent(jtiKey(connectionId, checked.jti), '1', LOGOUT_TTL_MS)))
    throw refused('this logout token was used already');
  const hashes = upstreamSessionOf(services, connectionId, checked, undefined);
  const now = services.now();
  const sessions = await services.storage.connections.sessionsOfUpstream(
    connectionId,
    {
      ...(hashes.sidHash !== null ? { sidHash: hashes.sidHash } : {}),
      ...(hashes.subHash !== null ? { subHash: hashes.subHash } : {}),
    },
    now,
  );
  return services.storage.transaction(async (tx) => {
    let ended = 0;
    for (const session of sessions) {
      const { sessionId } = session;
      if (!(await tx.sessions.revoke(session.identityId, sessionId, now))) continue;
      await endGrantsOfSessions(services, tx, [sessionId], now);
      await services.events.record(tx, {
        type: 'federation.logged_out',
        at: now,
        outcome: 'success',
        actor: { type: 'connection', id: connectionId },
        connectionId,
        identityId: session.identityId,
        sessionId,
      });
      ended++;
    }
    return { ended };
  });
}
