import { fail } from '#lib/errors/keyplane-error.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { constantEquals } from '#lib/crypto/constant-equals.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredConnection } from '../storage/interface.js';
import { authorizationUrl, upstreamConfiguration, type UpstreamChecks } from './oidc-upstream.js';
import { samlAuthnRedirect } from './saml-upstream.js';

/**
 * A round trip to a connection's upstream (docs/federation.md#signing-in): what `start` keeps in
 * shared state under the `state` it sends, until the callback takes it once in the same browser.
 */

export type FederationServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'events' | 'secrets' | 'fetcher' | 'now'
>;

const UPSTREAM_TTL_MS = 10 * 60_000;
const upstreamKey = (state: string) => `fed:state:${sha256Hex(state)}`;

/**
 * What a round trip is for besides a sign-in: linking the upstream identity to the account of the
 * session that started it on /account (docs/federation.md#linking-a-personal-account), or a
 * step-up of that session at the upstream (docs/federation.md#step-up-at-the-upstream).
 */
export type RoundTripPurpose =
  | { kind: 'link'; identityId: string; sessionId: string }
  | { kind: 'step-up'; identityId: string; sessionId: string; startedAt: number };

export interface UpstreamRoundTrip extends UpstreamChecks {
  connectionId: string;
  binding: string;
  returnTo: string;
  /** "Test this connection": the owner who asked; the callback shows the claims and creates nothing. */
  testedBy?: string;
  purpose?: RoundTripPurpose;
}

/** Sends the browser upstream for a round trip (`extra`: authorization parameters such as `prompt`). */
export async function sendUpstream(
  services: FederationServices,
  connection: StoredConnection,
  trip: Pick<UpstreamRoundTrip, 'binding' | 'returnTo' | 'testedBy' | 'purpose'>,
  extra: Record<string, string> = {},
): Promise<string> {
  if (connection.type === 'saml') {
    // Linking and the upstream step-up read an OIDC callback's claims (`auth_time`): SAML has neither path.
    if (trip.purpose !== undefined) throw fail('invalid_request', 'this is not offered for a SAML connection');
    return samlAuthnRedirect(services, connection, trip);
  }
  const config = await upstreamConfiguration(services, connection, services.now());
  const { url, checks } = await authorizationUrl(services, connection, config, extra);
  const stored: UpstreamRoundTrip = { ...checks, connectionId: connection.connectionId, ...trip };
  await services.state.set(upstreamKey(checks.state), JSON.stringify(stored), UPSTREAM_TTL_MS);
  return url;
}

/** The round trip this callback ends: taken once (a replay finds nothing), for this connection and this browser. */
export async function takeRoundTrip(
  services: FederationServices,
  connectionId: string,
  url: URL,
  bindingToken: string | undefined,
): Promise<UpstreamRoundTrip> {
  const state = url.searchParams.get('state');
  if (state === null || state === '' || state.length > 512)
    throw fail('federation_state_unknown', 'the identity provider sent the browser back without a state');
  const raw = await services.state.take(upstreamKey(state));
  if (raw === null) throw fail('federation_state_unknown', 'this sign-in is unknown, expired or finished already');
  const trip = JSON.parse(raw) as UpstreamRoundTrip;
  if (trip.connectionId !== connectionId)
    throw fail('federation_state_unknown', 'this sign-in was started for another connection');
  // Login CSRF: an answer carried into another browser finds no binding cookie of its own there.
  if (bindingToken === undefined || !constantEquals(trip.binding, sha256Hex(bindingToken)))
    throw fail('federation_state_unknown', 'this sign-in was started in another browser');
  return trip;
}
