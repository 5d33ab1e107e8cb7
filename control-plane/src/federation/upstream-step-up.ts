import { fail } from '#lib/errors/keyplane-error.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { SessionView } from '../context.js';
import type { StoredConnection, Stores } from '../storage/interface.js';
import type { SignInBrowser } from '../sessions/start-session.js';
import { upstreamOrigin, type UpstreamIdentity } from './oidc-upstream.js';
import { sendUpstream, type FederationServices, type RoundTripPurpose } from './round-trip.js';
import { subjectHash } from './subject-hash.js';
import { openFederatedSession, type SignInOutcome } from './open-session.js';

/**
 * Step-up at the upstream (docs/federation.md#step-up-at-the-upstream): a step-up uses the
 * account's own passkey; an account an org manages that has none signs in again at its org's
 * upstream instead (`prompt=login`, `max_age=0`), which renews the session at what the upstream
 * proved (at most `passkey`, never `sensitive`), and is then offered a passkey on /account.
 */

/** How far the upstream's clock may run behind ours when its `auth_time` is compared with the start. */
const AUTH_TIME_SKEW_MS = 5_000;

/**
 * The connection this session steps up at: the org's connection its latest upstream sign-in came
 * through, for an account the org manages that has no passkey; null for everyone else.
 */
export async function upstreamStepUpFor(
  services: { storage: Pick<Stores, 'identities' | 'credentials' | 'connections'> },
  session: Pick<SessionView, 'id' | 'identityId'>,
): Promise<{ connectionId: string; name: string; origin: string } | null> {
  const { storage } = services;
  const identity = await storage.identities.get(session.identityId);
  if (!identity?.managedBy) return null;
  if ((await storage.credentials.listByIdentity(session.identityId)).length > 0) return null;
  const signIn = await storage.connections.sessionSignIn(session.id);
  const connection = signIn === null ? null : await storage.connections.get(signIn.connectionId);
  if (!connection || connection.orgId !== identity.managedBy || connection.type !== 'oidc') return null;
  return { connectionId: connection.connectionId, name: connection.name, origin: upstreamOrigin(connection) };
}

/** Sends the browser to the upstream to sign in again, for this session, then back to `returnTo`. */
export async function startUpstreamStepUp(
  services: FederationServices,
  session: SessionView,
  bindingToken: string,
  returnTo: string,
): Promise<string> {
  const offer = await upstreamStepUpFor(services, session);
  if (offer === null) throw fail('forbidden', 'this account steps up with its own passkey');
  const connection = (await services.storage.connections.get(offer.connectionId))!;
  return sendUpstream(
    services,
    connection,
    {
      binding: sha256Hex(bindingToken),
      returnTo,
      purpose: { kind: 'step-up', identityId: session.identityId, sessionId: session.id, startedAt: services.now() },
    },
    // OIDC Core §3.1.2.1: sign the person in again, whatever session the upstream has.
    { prompt: 'login', max_age: '0' },
  );
}

/**
 * The callback of a step-up round trip: in the session that started it, the upstream must have
 * signed the same person in anew (`auth_time` at or after the start); the session is then renewed
 * like a sign-in through the connection.
 */
export async function finishUpstreamStepUp(
  services: FederationServices,
  connection: StoredConnection,
  upstream: UpstreamIdentity,
  purpose: Extract<RoundTripPurpose, { kind: 'step-up' }>,
  returnTo: string,
  browser: SignInBrowser,
): Promise<SignInOutcome> {
  const previous = browser.previous;
  if (previous?.id !== purpose.sessionId || previous.identityId !== purpose.identityId)
    throw fail('federation_state_unknown', 'this step-up was started by another session: start it again');
  const authTime = upstream.claims.auth_time;
  if (typeof authTime !== 'number' || authTime * 1000 < purpose.startedAt - AUTH_TIME_SKEW_MS)
    throw fail('upstream_response_invalid', 'the identity provider did not sign the person in again (auth_time)');
  const subject = subjectHash(services, connection.connectionId, upstream.subject);
  if ((await services.storage.connections.findIdentity(connection.connectionId, subject)) !== purpose.identityId)
    throw fail('upstream_response_invalid', 'the identity provider signed in another person');
  return openFederatedSession(services, connection, upstream, {
    returnTo,
    binding: '',
    browser,
  });
}
