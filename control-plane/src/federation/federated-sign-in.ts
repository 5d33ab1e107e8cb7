import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { randomHex, randomId, randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { constantEquals } from '#lib/crypto/constant-equals.js';
import { directoryKeys, federatedAmr, federatedAssurance } from '#lib/federation/upstream-identity.js';
import { domainOfAddress } from '#lib/orgs/mail-domain.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredConnection, Stores } from '../storage/interface.js';
import { openSession, type SignInBrowser } from '../sessions/start-session.js';
import { foldUserName } from '../scim/users.js';
import {
  authorizationUrl,
  finishUpstream,
  oidcSettings,
  upstreamConfiguration,
  type UpstreamChecks,
  type UpstreamIdentity,
} from './oidc-upstream.js';
import { upstreamSessionOf } from './upstream-logout.js';
import { samlAuthnRedirect } from './saml-upstream.js';
import { subjectHash } from './subject-hash.js';

/**
 * A sign-in through a connection (docs/federation.md#signing-in): the sign-in page makes a
 * pending sign-in bound to this browser by cookie; `start` sends the browser upstream with PKCE,
 * `state` and `nonce` kept in shared state; the callback takes them once, verifies the upstream's
 * answer, decides who the federated identity is (never by e-mail) and opens the session.
 */

export type FederationServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'events' | 'secrets' | 'fetcher' | 'now'
>;

/** A pending sign-in and an upstream round trip each live this long. */
const PENDING_TTL_MS = 15 * 60_000;
const UPSTREAM_TTL_MS = 10 * 60_000;
const PENDING_ID = /^[A-Za-z0-9_-]{32}$/;

const pendingKey = (id: string) => `fed:pending:${id}`;
const upstreamKey = (state: string) => `fed:state:${sha256Hex(state)}`;

interface PendingSignIn {
  /** SHA-256 of the browser's binding cookie. */
  binding: string;
  /** A path on this server to open afterwards (validated by the sign-in page). */
  returnTo: string;
}

interface UpstreamRoundTrip extends UpstreamChecks {
  connectionId: string;
  binding: string;
  returnTo: string;
  /** "Test this connection": the owner who asked; the callback shows the claims and creates nothing. */
  testedBy?: string;
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

async function sendUpstream(
  services: FederationServices,
  connection: StoredConnection,
  trip: Pick<UpstreamRoundTrip, 'binding' | 'returnTo' | 'testedBy'>,
): Promise<string> {
  if (connection.type === 'saml') return samlAuthnRedirect(services, connection, trip);
  const config = await upstreamConfiguration(services, connection, services.now());
  const { url, checks } = await authorizationUrl(services, connection, config);
  const stored: UpstreamRoundTrip = { ...checks, connectionId: connection.connectionId, ...trip };
  await services.state.set(upstreamKey(checks.state), JSON.stringify(stored), UPSTREAM_TTL_MS);
  return url;
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
  | { kind: 'session'; sessionToken: string; returnTo: string; identityId: string }
  | { kind: 'tested'; claims: Record<string, unknown> };

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
    const trip = await takeRoundTrip(services, connectionId, input);
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
    return await signIn(services, connection, upstream, subject, trip.returnTo, input.browser);
  } catch (error) {
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
    throw error;
  }
}

/** The round trip this callback ends: taken once (a replay finds nothing), for this connection and this browser. */
async function takeRoundTrip(
  services: FederationServices,
  connectionId: string,
  input: CallbackInput,
): Promise<UpstreamRoundTrip> {
  const state = input.url.searchParams.get('state');
  if (state === null || state === '' || state.length > 512)
    throw fail('federation_state_unknown', 'the identity provider sent the browser back without a state');
  const raw = await services.state.take(upstreamKey(state));
  if (raw === null) throw fail('federation_state_unknown', 'this sign-in is unknown, expired or finished already');
  const trip = JSON.parse(raw) as UpstreamRoundTrip;
  if (trip.connectionId !== connectionId)
    throw fail('federation_state_unknown', 'this sign-in was started for another connection');
  // Login CSRF: an answer carried into another browser finds no binding cookie of its own there.
  if (input.bindingToken === undefined || !constantEquals(trip.binding, sha256Hex(input.bindingToken)))
    throw fail('federation_state_unknown', 'this sign-in was started in another browser');
  return trip;
}

/** Opens the session of a verified upstream identity (OIDC callback, SAML continue). */
export async function signIn(
  services: FederationServices,
  connection: StoredConnection,
  upstream: UpstreamIdentity,
  subject: string,
  returnTo: string,
  browser: SignInBrowser,
): Promise<CallbackOutcome> {
  const { claims } = upstream;
  const now = services.now();
  const actor = { type: 'connection' as const, id: connection.connectionId };
  return services.storage.transaction(async (tx) => {
    let identityId = await tx.connections.findIdentity(connection.connectionId, subject);
    if (identityId !== null) await checkStillAdmitted(tx, connection, identityId);
    else identityId = await provision(services, tx, connection, claims, subject, now);
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
      actor,
      connectionId: connection.connectionId,
      subject,
      identityId,
      sessionId: session.sessionId,
      assurance,
    });
    return { kind: 'session' as const, sessionToken: session.token, returnTo, identityId };
  });
}

/** An org connection signs in only accounts its org manages, whatever was linked before. */
async function checkStillAdmitted(tx: Stores, connection: StoredConnection, identityId: string): Promise<void> {
  if (connection.orgId === null) return;
  const identity = await tx.identities.get(identityId);
  if (identity?.managedBy !== connection.orgId)
    throw fail('not_provisioned', 'this connection signs in only accounts its organization manages');
}

/**
 * A first sign-in: an account the org provisioned over SCIM and not yet linked to this connection
 * is matched by `externalId` (the upstream's object id), else by `userName` (the upstream UPN,
 * inside the org's proved mail domains), and linked; otherwise an org connection with `jit` creates a managed account and a `member`
 * membership when the upstream's address lies in a mail domain the org has proved (whatever the
 * upstream says of it); everything else is `not_provisioned`. An instance-wide connection signs
 * in only identities linked to it from the account page.
 */
async function provision(
  services: FederationServices,
  tx: Stores,
  connection: StoredConnection,
  claims: Record<string, unknown>,
  subject: string,
  now: number,
): Promise<string> {
  const orgId = connection.orgId;
  if (orgId === null)
    throw fail('not_provisioned', 'this connection signs in only accounts linked to it from their account page');
  /** Links the upstream identity to the account and says so. */
  const linkTo = async (identityId: string, type: 'federation.account_linked' | 'federation.account_created') => {
    if (!(await tx.connections.link(connection.connectionId, subject, identityId, now)))
      throw fail('conflict', 'this identity was linked meanwhile; sign in again');
    await services.events.record(tx, {
      type,
      at: now,
      outcome: 'success',
      actor: { type: 'connection', id: connection.connectionId },
      connectionId: connection.connectionId,
      subject,
      identityId,
      orgId,
    });
    return identityId;
  };
  const provisioned = await matchProvisioned(tx, connection, orgId, claims);
  if (provisioned !== null) return linkTo(provisioned, 'federation.account_linked');
  if (connection.jit === null)
    throw fail(
      'not_provisioned',
      'this organization has not added this person, and the connection creates no accounts',
    );
  const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : '';
  if (email.length > 254 || !(await inProvedDomain(tx, orgId, email)))
    throw fail('not_provisioned', "the upstream's address is not in a mail domain this organization has proved");
  const identityId = randomId('usr');
  await createManagedAccount(tx, email, identityId, now, orgId);
  const displayName = typeof claims.name === 'string' ? claims.name.normalize('NFC').trim().slice(0, 64) : '';
  await tx.orgs.addMember(orgId, { identityId, role: 'member', addedAt: now });
  const emailRow = await tx.emails.add({
    emailId: randomId('eml'),
    identityId,
    email,
    createdAt: now,
    verifiedAt: null,
  });
  // A verified address belongs to one account: one verified elsewhere stays unverified here.
  await tx.emails.markVerified(emailRow.emailId, now);
  if (displayName) await tx.identities.setDisplayName(identityId, displayName, now);
  return linkTo(identityId, 'federation.account_created');
}

/** Whether the (lower-cased) address lies in a mail domain the org has proved. */
async function inProvedDomain(tx: Stores, orgId: string, address: string): Promise<boolean> {
  const domain = domainOfAddress(address);
  const holder = domain === null ? null : await tx.orgs.mailDomainHolder(domain);
  return holder?.orgId === orgId && holder.verifiedAt !== null;
}

/**
 * The provisioned account a first sign-in is (docs/scim.md#signing-in): a managed account of the
 * org, not yet linked to this connection, whose `externalId` is the upstream's object id, else
 * whose `userName` is the upstream UPN when that lies in a mail domain the org has proved. An
 * ambiguous `externalId` matches nothing.
 */
async function matchProvisioned(
  tx: Stores,
  connection: StoredConnection,
  orgId: string,
  claims: Record<string, unknown>,
): Promise<string | null> {
  const keys = directoryKeys(oidcSettings(connection).issuer, claims);
  const unlinked = async (identityId: string) =>
    (await tx.identities.get(identityId))?.managedBy === orgId &&
    !(await tx.connections.isLinked(connection.connectionId, identityId));
  if (keys.externalId !== null) {
    const byExternalId = await tx.scim.usersByExternalId(orgId, keys.externalId);
    if (byExternalId.length === 1 && (await unlinked(byExternalId[0]!.identityId))) return byExternalId[0]!.identityId;
  }
  if (keys.userName === null) return null;
  if (!(await inProvedDomain(tx, orgId, keys.userName.toLowerCase()))) return null;
  const byName = await tx.scim.userByName(orgId, foldUserName(keys.userName));
  return byName !== null && (await unlinked(byName.identityId)) ? byName.identityId : null;
}

/** Creates the managed account under a username made from the address's local part. */
async function createManagedAccount(
  tx: Stores,
  email: string,
  identityId: string,
  now: number,
  orgId: string,
): Promise<void> {
  const local = (email.split('@')[0] ?? '')
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^a-z0-9._-]/g, '')
    .replace(/^[._-]+/, '')
    .slice(0, 20);
  for (let attempt = 0; attempt < 5; attempt++) {
    const username = `${local.length >= 3 ? local : `user${local}`}-${randomHex(3)}`;
    const created = await tx.identities.create({
      identityId,
      username,
      displayName: '',
      preferences: {},
      founder: false,
      managedBy: orgId,
      createdAt: now,
      updatedAt: now,
    });
    if (created) return;
  }
  throw fail('conflict', 'no free username was found for the new account; sign in again');
}
