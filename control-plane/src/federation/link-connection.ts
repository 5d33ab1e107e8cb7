import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { fail } from '#lib/errors/keyplane-error.js';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import type { Stores } from '../storage/interface.js';
import type { SignInBrowser } from '../sessions/start-session.js';
import { readAssertion, requestOptions, takeChallenge, verifyAssertion } from '../passkeys/ceremony.js';
import type { UpstreamIdentity } from './oidc-upstream.js';
import { sendUpstream, type FederationServices, type RoundTripPurpose } from './round-trip.js';
import { subjectHash } from './subject-hash.js';
import { upstreamOrigin } from './oidc-upstream.js';
import type { StoredConnection } from '../storage/interface.js';

/**
 * Linking a personal account to an instance-wide connection (docs/federation.md#linking-a-personal-account),
 * only from /account while signed in: "Connect" starts a round trip that carries the link intent
 * (this account, this session) in its shared state; the callback of that round trip alone holds
 * the verified upstream identity and shows it; a fresh assertion by a passkey of the account
 * confirms it and writes `federation.linked`. A callback the person did not start there is an
 * ordinary sign-in and never links. Never for an account an org manages, an operator's or an
 * auditor's.
 */

/** A verified upstream identity waiting for the passkey that confirms its link: ten minutes, one use. */
const HELD_TTL_MS = 10 * 60_000;
const LINK_ID = /^[A-Za-z0-9_-]{32}$/;
const heldKey = (linkId: string) => `fed:link:${sha256Hex(linkId)}`;

interface HeldLinkState {
  connectionId: string;
  /** Keyed hash of the upstream subject. */
  subject: string;
  identityId: string;
  sessionId: string;
}

/** What the link page shows: the connection and the upstream identity in the upstream's words. */
export interface HeldLink {
  linkId: string;
  connectionId: string;
  connectionName: string;
  upstream: { name: string | null; email: string | null; subject: string };
}

export type LinkServices = Pick<ControlPlaneServices, 'config' | 'storage' | 'state' | 'events' | 'now'>;

/** Refuses an account that may never be linked: managed by an org, the founder, an operator or an auditor. */
async function checkMayLink(tx: Stores, identityId: string): Promise<void> {
  const identity = await tx.identities.get(identityId);
  if (!identity) throw fail('unauthorized', 'this account no longer exists');
  if (identity.managedBy)
    throw fail('forbidden', "an account an organization manages signs in through its organization's connection");
  if (identity.founder || (await tx.operators.roleOf(identityId)) !== null)
    throw fail('forbidden', "an operator's or auditor's account is never linked to a connection");
}

/** Whether the account may link connections at all (the account page shows the section only then). */
export async function mayLink(services: Pick<LinkServices, 'storage'>, identityId: string): Promise<boolean> {
  try {
    await checkMayLink(services.storage, identityId);
    return true;
  } catch {
    return false;
  }
}

/** The instance-wide connections, each with when this account was linked to it (null: not linked). */
export async function accountConnections(
  services: Pick<LinkServices, 'storage'>,
  identityId: string,
): Promise<Array<{ connectionId: string; name: string; linkedAt: number | null; origin: string }>> {
  const [connections, links] = await Promise.all([
    services.storage.connections.list(null),
    services.storage.connections.linksOf(identityId),
  ]);
  const linked = new Map(links.map((l) => [l.connectionId, l.linkedAt]));
  // Linking reads an OIDC callback (docs/federation.md#linking-a-personal-account): SAML connections are not offered.
  return connections
    .filter((c) => c.type === 'oidc')
    .map((c) => ({
      connectionId: c.connectionId,
      name: c.name,
      linkedAt: linked.get(c.connectionId) ?? null,
      origin: upstreamOrigin(c),
    }));
}

async function instanceWide(storage: Pick<Stores, 'connections'>, connectionId: string): Promise<StoredConnection> {
  const connection = await storage.connections.get(connectionId);
  if (!connection || connection.orgId !== null || connection.type !== 'oidc')
    throw fail('not_found', 'no such connection');
  return connection;
}

/** "Connect": the upstream's authorization URL, for a round trip that carries this session's link intent. */
export async function startLink(
  services: FederationServices,
  session: SessionView,
  connectionId: string,
  bindingToken: string,
): Promise<string> {
  const connection = await instanceWide(services.storage, connectionId);
  await checkMayLink(services.storage, session.identityId);
  if (await services.storage.connections.isLinked(connectionId, session.identityId))
    throw fail('conflict', 'this account is linked to this connection already');
  return sendUpstream(services, connection, {
    binding: sha256Hex(bindingToken),
    returnTo: '/account',
    purpose: { kind: 'link', identityId: session.identityId, sessionId: session.id },
  });
}

/**
 * The callback of a "Connect" round trip: in the session that started it, an upstream identity
 * linked to no account yet is held for the passkey that confirms it.
 */
export async function holdLink(
  services: FederationServices,
  connection: StoredConnection,
  upstream: UpstreamIdentity,
  purpose: Extract<RoundTripPurpose, { kind: 'link' }>,
  browser: SignInBrowser,
): Promise<HeldLink> {
  const previous = browser.previous;
  if (previous?.id !== purpose.sessionId || previous.identityId !== purpose.identityId)
    throw fail(
      'federation_state_unknown',
      'this link was started by another session: start it again from your account',
    );
  if (connection.orgId !== null) throw fail('not_found', 'no such connection');
  await checkMayLink(services.storage, purpose.identityId);
  const subject = subjectHash(services, connection.connectionId, upstream.subject);
  const linkedTo = await services.storage.connections.findIdentity(connection.connectionId, subject);
  if (linkedTo !== null)
    throw fail(
      'conflict',
      linkedTo === purpose.identityId
        ? 'this identity is linked to your account already'
        : 'this identity is linked to another account',
    );
  const linkId = randomToken(24);
  const held: HeldLinkState = { connectionId: connection.connectionId, subject, ...purpose };
  await services.state.set(heldKey(linkId), JSON.stringify(held), HELD_TTL_MS);
  const text = (value: unknown) => (typeof value === 'string' && value.length <= 256 ? value : null);
  return {
    linkId,
    connectionId: connection.connectionId,
    connectionName: connection.name,
    upstream: {
      name: text(upstream.claims.name),
      email: text(upstream.claims.email) ?? text(upstream.claims.preferred_username),
      subject: upstream.subject,
    },
  };
}

async function heldFor(services: Pick<LinkServices, 'state'>, session: SessionView, linkId: string, take: boolean) {
  const raw = LINK_ID.test(linkId)
    ? await (take ? services.state.take(heldKey(linkId)) : services.state.get(heldKey(linkId)))
    : null;
  const held = raw === null ? null : (JSON.parse(raw) as HeldLinkState);
  if (held === null || held.identityId !== session.identityId || held.sessionId !== session.id)
    throw fail('federation_state_unknown', 'this link is unknown, expired or finished already: start it again');
  return held;
}

/** Request options for the passkey that confirms a held link, limited to the account's passkeys. */
export async function linkOptions(
  services: LinkServices,
  session: SessionView,
  linkId: string,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  await heldFor(services, session, linkId, false);
  const allow = await services.storage.credentials.listByIdentity(session.identityId);
  if (allow.length === 0) throw fail('forbidden', 'add a passkey to your account first: it confirms the link');
  return requestOptions(services, allow, {
    purpose: 'link',
    identityId: session.identityId,
    sessionId: session.id,
    link: sha256Hex(linkId),
  });
}

/** The passkey's assertion confirms the held link: the link is written with `federation.linked`. */
export async function confirmLink(
  services: LinkServices & Pick<ControlPlaneServices, 'metadata'>,
  session: SessionView,
  linkId: string,
  response: unknown,
): Promise<{ receipt?: string }> {
  const { id, clientData, fields, userHandle } = await readAssertion(response);
  const challenge = await takeChallenge(services, clientData, 'link');
  if (
    challenge.identityId !== session.identityId ||
    challenge.sessionId !== session.id ||
    challenge.link !== sha256Hex(linkId)
  )
    throw fail('challenge_mismatch', 'this confirmation was started for another link or session');
  const credential = await services.storage.credentials.get(id);
  if (
    !credential ||
    credential.identityId !== session.identityId ||
    (userHandle ?? session.identityId) !== session.identityId
  )
    throw fail('unknown_credential', 'this passkey does not belong to your account');
  const use = await verifyAssertion(services, response, clientData, fields, credential);
  const held = await heldFor(services, session, linkId, true);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    await checkMayLink(tx, session.identityId);
    await instanceWide(tx, held.connectionId);
    if (!(await tx.connections.link(held.connectionId, held.subject, session.identityId, now)))
      throw fail('conflict', 'this identity was linked to an account meanwhile');
    await tx.credentials.recordUse(credential.credId, { ...use, at: now });
    const { receipt } = await services.events.record(tx, {
      type: 'federation.linked',
      at: now,
      outcome: 'success',
      actor: { type: 'person', id: session.identityId },
      connectionId: held.connectionId,
      subject: held.subject,
      identityId: session.identityId,
    });
    return receipt ? { receipt } : {};
  });
}

/** Removes the account's link to a connection, with `federation.unlinked`. */
export async function unlinkConnection(
  services: Pick<LinkServices, 'storage' | 'events' | 'now'>,
  session: SessionView,
  connectionId: string,
): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.connections.unlink(connectionId, session.identityId)))
      throw fail('not_found', 'this account is not linked to that connection');
    const { receipt } = await services.events.record(tx, {
      type: 'federation.unlinked',
      at: now,
      outcome: 'success',
      actor: { type: 'person', id: session.identityId },
      connectionId,
      identityId: session.identityId,
    });
    return receipt ? { receipt } : {};
  });
}
