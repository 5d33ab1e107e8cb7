import { fail } from '#lib/errors/keyplane-error.js';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { constantEquals } from '#lib/crypto/constant-equals.js';
import type { StoredConnection } from '../storage/interface.js';
import type { SignInBrowser } from '../sessions/start-session.js';
import { finishUpstream, upstreamConfiguration } from './oidc-upstream.js';
import { sendUpstream, takeRoundTrip, type FederationServices } from './round-trip.js';
import { subjectHash } from './subject-hash.js';
import { openFederatedSession, recordRefusal, type SignInOutcome } from './open-session.js';
import { holdLink, type HeldLink } from './link-connection.js';
import { finishUpstreamStepUp } from './upstream-step-up.js';

export type { FederationServices } from './round-trip.js';

/**
 * A sign-in through a connection (docs/federation.md#signing-in): the sign-in page makes a
 * pending sign-in bound to this browser by cookie; `start` sends the browser upstream with PKCE,
 * `state` and `nonce` kept in shared state; the callback takes them once, verifies the upstream's
 * answer, decides who the federated identity is (never by e-mail) and opens the session.
 */

/** A pending sign-in and an upstream round trip each live this long. */
const PENDING_TTL_MS = 15 * 60_000;
const PENDING_ID = /^[A-Za-z0-9_-]{32}$/;

const pendingKey = (id: string) => `fed:pending:${id}`;

interface PendingSignIn {
  /** SHA-256 of the browser's binding cookie. */
  binding: string;
  /** A path on this server to open afterwards (validated by the sign-in page). */
  returnTo: string;
}

/** Makes a pending sign-in for this browser's binding cookie value; returns its id. */
export async function beginPendingSignIn(
  services: Pick<FederationServices, 'state'>,
  bindingToken: string,
  returnTo: string,
): Promise<string> {
  const id = randomToken(24);
  const pending: PendingSignIn = { binding: sha256Hex(bindingToken), returnTo };
  await services.state.set(pendingKey(id), JSON.stringify(pending), PENDING_TTL_MS);
  return id;
}

/** The start link of a connection for a pending sign-in. */
export function startHref(connectionId: string, pendingId: string): string {
  return `/federation/${encodeURIComponent(connectionId)}/start?request=${pendingId}`;
}

/**
 * `GET /federation/{connectionId}/start`: the upstream's authorization URL, or null when the
 * request names no pending sign-in of this browser (the sign-in page is shown instead).
 */
export async function startFederatedSignIn(
  services: FederationServices,
  connectionId: string,
  pendingId: string | undefined,
  bindingToken: string | undefined,
): Promise<string | null> {
  const connection = await services.storage.connections.get(connectionId);
  if (!connection) throw fail('not_found', 'no such connection');
  if (pendingId === undefined || !PENDING_ID.test(pendingId) || bindingToken === undefined) return null;
  const raw = await services.state.get(pendingKey(pendingId));
  if (raw === null) return null;
  const pending = JSON.parse(raw) as PendingSignIn;
  if (!constantEquals(pending.binding, sha256Hex(bindingToken))) return null;
  return sendUpstream(services, connection, { binding: pending.binding, returnTo: pending.returnTo });
}

/**
 * "Test this connection" (docs/federation.md#testing-a-connection): the owner's browser goes
 * upstream like a sign-in; the callback shows the claims received and writes `federation.tested`,
 * creating no session, account or link.
 */
export function startConnectionTest(
  services: FederationServices,
  connection: StoredConnection,
  ownerId: string,
  bindingToken: string,
): Promise<string> {
  return sendUpstream(services, connection, { binding: sha256Hex(bindingToken), returnTo: '', testedBy: ownerId });
}

export interface CallbackInput {
  /** The callback URL as the browser requested it (query included), on this issuer. */
  url: URL;
  bindingToken: string | undefined;
  browser: SignInBrowser;
}

export type CallbackOutcome =
  SignInOutcome | { kind: 'tested'; claims: Record<string, unknown> } | { kind: 'link'; link: HeldLink };

/**
 * `GET /federation/{connectionId}/callback`. Every refusal is a reason the page names, with a
 * `federation.refused` receipt: a missing, unknown, used or other browser's `state`, the
 * upstream's `error=`, an answer that does not verify, an unreachable upstream, an identity this
 * connection does not sign in.
 */
export async function finishFederatedSignIn(
  services: FederationServices,
  connectionId: string,
  input: CallbackInput,
): Promise<CallbackOutcome> {
  const connection = await services.storage.connections.get(connectionId);
  if (!connection || connection.type !== 'oidc') throw fail('not_found', 'no such connection');
  let subject: string | null = null;
  try {
    const trip = await takeRoundTrip(services, connectionId, input.url, input.bindingToken);
    const config = await upstreamConfiguration(services, connection, services.now());
    const upstream = await finishUpstream(services, connection, config, input.url, trip);
    subject = subjectHash(services, connectionId, upstream.subject);
    if (trip.testedBy !== undefined) {
      await services.events.record(services.storage, {
        type: 'federation.tested',
        at: services.now(),
        outcome: 'success',
        actor: { type: 'person', id: trip.testedBy },
        connectionId,
        subject,
      });
      return { kind: 'tested', claims: upstream.claims };
    }
    if (trip.purpose?.kind === 'link')
      return { kind: 'link', link: await holdLink(services, connection, upstream, trip.purpose, input.browser) };
    if (trip.purpose?.kind === 'step-up')
      return await finishUpstreamStepUp(services, connection, upstream, trip.purpose, trip.returnTo, input.browser);
    return await openFederatedSession(services, connection, upstream, {
      returnTo: trip.returnTo,
      binding: trip.binding,
      browser: input.browser,
    });
  } catch (error) {
    await recordRefusal(services, connectionId, subject, error);
    throw error;
  }
}
