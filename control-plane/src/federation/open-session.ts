import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { constantEquals } from '#lib/crypto/constant-equals.js';
import { federatedAmr, federatedAssurance } from '#lib/federation/upstream-identity.js';
import type { StoredConnection } from '../storage/interface.js';
import { openSession, type SignInBrowser } from '../sessions/start-session.js';
import type { UpstreamIdentity } from './oidc-upstream.js';
import type { FederationServices } from './round-trip.js';
import { upstreamSessionOf } from './upstream-logout.js';
import { subjectHash } from './subject-hash.js';
import { applyIdentityPlan, planIdentity } from './federated-identity.js';

/**
 * The last step of every sign-in through a connection, OIDC or SAML (docs/federation.md#signing-in):
 * the upstream's answer is verified already and names `(connectionId, upstream subject)` plus
 * claims. Verify, then open: when the browser holds a live session of ANOTHER account, the
 * verified result waits under a one-time id bound to this browser and the person is asked first
 * ("You are signed in as X. Continue as Y?"); the same account, or no session, opens at once.
 */

export type SignInOutcome =
  | { kind: 'session'; sessionToken: string; returnTo: string; identityId: string }
  | { kind: 'confirm'; question: ReplaceQuestion };

/** The question the page asks before a federated sign-in replaces another account's session. */
export interface ReplaceQuestion {
  /** The one-time id the page's form posts back. */
  confirmId: string;
  /** The username of the account signed in now. */
  current: string;
  /** Who continuing signs in: the account's username, or for an account still to be created its address. */
  next: string;
  connectionName: string;
}

export interface FinishingInput {
  /** A path on this server to open afterwards. */
  returnTo: string;
  /** SHA-256 (hex) of the browser's binding cookie, which the round trip was bound to. */
  binding: string;
  browser: SignInBrowser;
}

/** A verified result waiting for the person's answer: five minutes, taken once. */
const HELD_TTL_MS = 5 * 60_000;
const CONFIRM_ID = /^[A-Za-z0-9_-]{32}$/;
const heldKey = (confirmId: string) => `fed:confirm:${sha256Hex(confirmId)}`;

interface HeldSignIn {
  binding: string;
  connectionId: string;
  upstream: UpstreamIdentity;
  returnTo: string;
  /** The session the question was about. */
  previousSessionId: string;
}

/**
 * Opens (or renews) the session for a verified upstream identity, or asks first when that would
 * replace another account's live session. A refusal (`not_provisioned`…) comes before any question.
 */
export async function openFederatedSession(
  services: FederationServices,
  connection: StoredConnection,
  upstream: UpstreamIdentity,
  input: FinishingInput,
): Promise<SignInOutcome> {
  const subject = subjectHash(services, connection.connectionId, upstream.subject);
  const previous = input.browser.previous;
  if (previous !== undefined) {
    const plan = await planIdentity(services.storage, connection, upstream.claims, subject);
    const nextId = plan.kind === 'create' ? null : plan.identityId;
    if (nextId !== previous.identityId) {
      const confirmId = randomToken(24);
      const held: HeldSignIn = {
        binding: input.binding,
        connectionId: connection.connectionId,
        upstream,
        returnTo: input.returnTo,
        previousSessionId: previous.id,
      };
      await services.state.set(heldKey(confirmId), JSON.stringify(held), HELD_TTL_MS);
      const username = async (identityId: string) => (await services.storage.identities.get(identityId))?.username;
      return {
        kind: 'confirm',
        question: {
          confirmId,
          current: (await username(previous.identityId)) ?? '',
          next: (nextId === null ? undefined : await username(nextId)) ?? (plan.kind === 'create' ? plan.email : ''),
          connectionName: connection.name,
        },
      };
    }
  }
  return signIn(services, connection, upstream, subject, input.returnTo, input.browser);
}

/**
 * The person's answer to the question (`POST /federation/confirm`): `continue` opens the session
 * held for this browser (ending the other account's, as any sign-in does); `cancel` keeps the
 * session there is and writes `federation.refused` with reason `replace_declined`. Either way
 * the held result is spent.
 */
export async function confirmFederatedSignIn(
  services: FederationServices,
  input: {
    confirmId: string;
    decision: 'continue' | 'cancel';
    bindingToken: string | undefined;
    browser: SignInBrowser;
  },
): Promise<SignInOutcome | { kind: 'cancelled' }> {
  const raw = CONFIRM_ID.test(input.confirmId) ? await services.state.take(heldKey(input.confirmId)) : null;
  if (raw === null) throw fail('federation_state_unknown', 'this sign-in is unknown, expired or finished already');
  const held = JSON.parse(raw) as HeldSignIn;
  if (input.bindingToken === undefined || !constantEquals(held.binding, sha256Hex(input.bindingToken)))
    throw fail('federation_state_unknown', 'this sign-in was started in another browser');
  const connection = await services.storage.connections.get(held.connectionId);
  if (!connection) throw fail('not_found', 'no such connection');
  const subject = subjectHash(services, connection.connectionId, held.upstream.subject);
  try {
    if (input.decision === 'cancel') {
      await services.events.record(services.storage, {
        type: 'federation.refused',
        at: services.now(),
        outcome: 'failure',
        actor: { type: 'connection', id: connection.connectionId },
        connectionId: connection.connectionId,
        subject,
        reason: 'replace_declined',
      });
      return { kind: 'cancelled' };
    }
    const previous = input.browser.previous;
    if (previous !== undefined && previous.id !== held.previousSessionId)
      throw fail('federation_state_unknown', 'the session in this browser changed meanwhile; sign in again');
    return await signIn(services, connection, held.upstream, subject, held.returnTo, input.browser);
  } catch (error) {
    await recordRefusal(services, connection.connectionId, subject, error);
    throw error;
  }
}

/** `federation.refused` for a refusal the page names (an unknown connection or an outage is none). */
export async function recordRefusal(
  services: Pick<FederationServices, 'events' | 'storage' | 'now'>,
  connectionId: string,
  subject: string | null,
  error: unknown,
): Promise<void> {
  if (isKeyplaneError(error) && error.reason !== 'not_found' && error.reason !== 'unavailable')
    await services.events.record(services.storage, {
      type: 'federation.refused',
      at: services.now(),
      outcome: 'failure',
      actor: { type: 'connection', id: connectionId },
      connectionId,
      subject,
      reason: error.reason,
    });
}

async function signIn(
  services: FederationServices,
  connection: StoredConnection,
  upstream: UpstreamIdentity,
  subject: string,
  returnTo: string,
  browser: SignInBrowser,
): Promise<SignInOutcome> {
  const { claims } = upstream;
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const plan = await planIdentity(tx, connection, claims, subject);
    const identityId = await applyIdentityPlan(services, tx, connection, plan, subject, now);
    const assurance = federatedAssurance(claims, connection.maxAssurance);
    const session = await openSession(services, tx, browser, {
      identityId,
      assurance,
      amr: federatedAmr(claims),
      upstream: connection.connectionId,
    });
    await tx.connections.markSession(
      session.sessionId,
      connection.connectionId,
      now,
      upstreamSessionOf(services, connection.connectionId, claims, upstream.idToken),
    );
    await services.events.record(tx, {
      type: 'federation.sign_in',
      at: now,
      outcome: 'success',
      actor: { type: 'connection', id: connection.connectionId },
      connectionId: connection.connectionId,
      subject,
      identityId,
      sessionId: session.sessionId,
      assurance,
    });
    return { kind: 'session' as const, sessionToken: session.token, returnTo, identityId };
  });
}
