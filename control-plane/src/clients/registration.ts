import { fail } from '#lib/errors/keyplane-error.js';
import {
  clientTypeOf,
  usesClientSecret,
  validateClientMetadata,
  type ClientMetadata,
  type MetadataOptions,
} from '#lib/oauth/client-metadata.js';
import { hashClientSecret, verifyClientSecret } from '#lib/oauth/client-auth.js';
import { oauthError } from '#lib/oauth/errors.js';
import { checkResourceOwnership, type ResourceRegistrar } from '#lib/oauth/resource-ownership.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import { endGrantsOfClient } from '../grants/end-grants.js';
import { orgOwnerFor } from './ownership.js';
import { orgsAdministeredBy, type OrgServices } from '../orgs/membership.js';
import { orgsNamedBy } from '#lib/access/evaluate-access.js';
import { constantEquals } from '#lib/crypto/constant-equals.js';
import { presentsAdminToken } from '#lib/http/admin-token.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { checkFetchedUris } from './remote-key-sets.js';
import type { StoredClient, Stores } from '../storage/interface.js';
import { refuseOutsideProfile } from '../rollout/constraints.js';
import type { Actor } from '../events/types.js';

/**
 * The steps of RFC 7591 registration and RFC 7592 management, each a small named check.
 *
 * Secrets: a client secret and a registration access token are 256 random bits each, shown
 * once. Only their SHA-256 is stored: with 256 bits of entropy a fast hash is enough (nothing
 * to brute-force), and look-ups stay cheap. Comparison is constant-time.
 */

/** Who registers: the admin token (the operator owns the client), or a person for themself or an org they administer. */
export type Registrar = { by: 'admin'; ownerId: null } | { by: 'session'; ownerId: string; identityId: string };

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

/** The Bearer token of an Authorization header: undefined without one, null when it is not a Bearer token. */
function bearerToken(header: string | undefined): string | undefined | null {
  if (header === undefined) return undefined;
  const match = BEARER.exec(header);
  return match ? match[1]! : null;
}

function invalidToken(message: string) {
  return oauthError('unauthorized', message, {
    error: 'invalid_token',
    headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
  });
}

/**
 * Who may register: the operator's admin token (the RFC 7591 initial access token), or a
 * signed-in session, which then owns the client. A presented but wrong token never falls back
 * to the session.
 */
export function authenticateRegistrar(
  services: Pick<ControlPlaneServices, 'config'>,
  authorization: string | undefined,
  session: SessionView | undefined,
): Registrar {
  if (presentsAdminToken(services.config.adminToken, authorization, { oauth: true }))
    return { by: 'admin', ownerId: null };
  if (session) return { by: 'session', ownerId: session.identityId, identityId: session.identityId };
  throw oauthError('unauthorized', 'send the admin token as a Bearer token, or sign in', {
    error: 'invalid_token',
    headers: { 'www-authenticate': 'Bearer' },
  });
}

/**
 * `org: <slug>` in a registration: the organization owns the client (docs/orgs.md#apps). Only a
 * session of one of its admins or owners may do that; the admin token registers operator clients.
 */
export async function orgRegistrar(services: OrgServices, registrar: Registrar, org: unknown): Promise<Registrar> {
  if (registrar.by !== 'session')
    throw fail('invalid_request', "an organization's app is registered from a session of one of its admins or owners");
  return {
    by: 'session',
    ownerId: await orgOwnerFor(services, org, registrar.identityId),
    identityId: registrar.identityId,
  };
}

/**
 * RFC 7592 §2: the registration access token of that very client. An unknown client answers
 * 401 like a wrong token, so client ids cannot be probed.
 */
export async function authenticateRegistrationToken(
  services: Pick<ControlPlaneServices, 'storage'>,
  authorization: string | undefined,
  clientId: string,
): Promise<StoredClient> {
  const token = bearerToken(authorization);
  if (!token)
    throw oauthError('unauthorized', 'send the registration access token as a Bearer token', {
      error: 'invalid_token',
      headers: { 'www-authenticate': 'Bearer' },
    });
  const client = await services.storage.clients.get(clientId);
  // Hash and compare even when the client is unknown, so both paths cost the same.
  const matches = constantEquals(sha256Hex(token), client?.registrationTokenHash ?? '');
  if (!client || !matches) throw invalidToken('the registration access token is not valid for this client');
  return client;
}

/** Fields a client may echo back from a read (RFC 7592 §2.2) and that we ignore. */
const READ_ONLY = [
  'registration_access_token',
  'registration_client_uri',
  'client_secret_expires_at',
  'client_id_issued_at',
  'client_type',
  'ok',
  'receipt',
];

/** RFC 7592 §2.2: the body names the client, the revision it was based on, and no new secret. */
export function checkUpdateRequest(
  client: StoredClient,
  body: unknown,
  options: MetadataOptions = {},
): { revision: number; metadata: ClientMetadata } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw oauthError('invalid_client_metadata', 'the update must be a JSON object');
  const fields = { ...(body as Record<string, unknown>) };
  if (fields.client_id !== client.clientId)
    throw oauthError('invalid_request', 'client_id in the body must be the client being updated');
  const revision = fields.revision;
  if (typeof revision !== 'number' || !Number.isInteger(revision) || revision < 1) {
    throw oauthError('invalid_request', 'revision is required: send the revision this update is based on');
  }
  if (fields.client_secret !== undefined) {
    // The client may repeat its secret but never choose one.
    if (!verifyClientSecret(fields.client_secret, client.secretHash))
      throw oauthError('invalid_client_metadata', 'client_secret cannot be set by the client');
  }
  for (const field of [...READ_ONLY, 'client_id', 'client_secret', 'revision']) delete fields[field];
  return { revision, metadata: validateClientMetadata(fields, options) };
}

export interface IssuedSecrets {
  clientSecret?: string;
  registrationToken?: string;
}

/** A fresh 256-bit secret and the hash that is stored in its place. */
export function newSecret(): { value: string; hash: string } {
  const value = randomToken(32);
  return { value, hash: hashClientSecret(value) };
}

/**
 * The secret a client ends up with after an update: kept while it still authenticates with a
 * secret, issued when it newly does, dropped when it no longer does.
 */
function secretAfterUpdate(
  client: StoredClient,
  metadata: ClientMetadata,
  now: number,
): { hash: string | null; issuedAt: number | null; value?: string } {
  if (!usesClientSecret(metadata.token_endpoint_auth_method)) return { hash: null, issuedAt: null };
  if (client.secretHash !== null) return { hash: client.secretHash, issuedAt: client.secretIssuedAt };
  const secret = newSecret();
  return { hash: secret.hash, issuedAt: now, value: secret.value };
}

/** The RFC 7591 §3.2.1 / RFC 7592 §3 response body. Secrets appear only when just issued. */
export function describeClient(
  services: Pick<ControlPlaneServices, 'config'>,
  client: StoredClient,
  issued: IssuedSecrets = {},
): Record<string, unknown> {
  return {
    client_id: client.clientId,
    client_id_issued_at: Math.floor(client.createdAt / 1000),
    ...(issued.clientSecret !== undefined ? { client_secret: issued.clientSecret } : {}),
    ...(client.secretHash !== null ? { client_secret_expires_at: 0 } : {}),
    ...(issued.registrationToken !== undefined ? { registration_access_token: issued.registrationToken } : {}),
    registration_client_uri: `${services.config.issuer}/register/${encodeURIComponent(client.clientId)}`,
    revision: client.revision,
    client_type: clientTypeOf(client.metadata.token_endpoint_auth_method),
    ...client.metadata,
  };
}

export function staleRevision(): never {
  throw fail('stale_revision', 'the client changed since that revision; read it again and retry', {
    fields: { error: 'invalid_request', error_description: 'stale revision' },
  });
}

/** A stored client, the secrets issued with this change (shown this once) and its receipt. */
export interface ClientChange {
  client: StoredClient;
  issued: IssuedSecrets;
  receipt?: string;
}

/**
 * Refuses resources that are another owner's gateway URL (docs/security.md "Cross-client
 * tokens"). An update acts for the client's owner (the operator for a client without one).
 */
export async function checkOwnedResources(
  services: Pick<ControlPlaneServices, 'storage'>,
  metadata: ClientMetadata,
  ownerId: string | null,
): Promise<void> {
  if (metadata.resources.length === 0) return;
  const registrar: ResourceRegistrar = ownerId === null ? { admin: true } : { admin: false, ownerId };
  const gateways = (await services.storage.clients.listGateways()).map((client) => ({
    clientId: client.clientId,
    ownerId: client.ownerId,
    redirectUris: client.metadata.redirect_uris,
  }));
  checkResourceOwnership(metadata.resources, gateways, registrar);
}

/**
 * Access rules name only orgs the client's owner administers (docs/security.md#rules-name-only-administered-orgs):
 * a rule naming an org makes the gateway's signed config carry that org's member directory, and
 * the client a gate on its members. A personal owner may name the orgs where it is an admin or
 * owner; an org owner names itself; the operator (no owner) names any.
 */
export async function checkNamedOrgs(
  services: Pick<ControlPlaneServices, 'storage'>,
  metadata: ClientMetadata,
  ownerId: string | null,
): Promise<void> {
  if (ownerId === null) return;
  const rules = [
    { orgs: metadata.access.orgs ?? [] },
    ...(metadata.gateway?.routes ?? []).flatMap((route) => [
      route.allow ?? {},
      ...Object.values(route.tools ?? {}).map((tool) => tool.allow ?? {}),
    ]),
  ];
  const named = new Set(rules.flatMap(orgsNamedBy));
  if (named.size === 0) return;
  const org = await services.storage.orgs.get(ownerId);
  const administered = new Set(
    org ? [org.slug] : (await orgsAdministeredBy(services, ownerId)).map((o) => o.slug.toLowerCase()),
  );
  const foreign = [...named].find((slug) => !administered.has(slug));
  if (foreign !== undefined)
    throw oauthError(
      'invalid_client_metadata',
      `access rules may name only orgs the client's owner administers; ${foreign.slice(0, 64)} is not one`,
    );
}

/**
 * `first_party` skips the approval page and `v1_bridge` puts a session token in a URL, so only
 * the operator (a client without owner) sets them (docs/security.md "One consent gate").
 */
export function checkOperatorOnlyMetadata(metadata: ClientMetadata, ownerId: string | null): void {
  if (metadata.first_party === true && ownerId !== null)
    throw oauthError('invalid_client_metadata', 'first_party can only be set with the admin token');
  if (metadata.v1_bridge === true && ownerId !== null)
    throw oauthError('invalid_client_metadata', 'v1_bridge can only be set with the admin token');
}

export interface RegisterOptions {
  /** The connector template the registration came from (recorded in `client.registered`). */
  connector?: string;
  /** Runs in the registration's transaction after the insert (the rollout binds its project there). */
  onInsert?: (tx: Stores, client: StoredClient) => Promise<void>;
  /** Who acted, when not the registrar itself (an operator in the console registers as the operator). */
  actor?: Actor;
}

/** RFC 7591 §3.2: stores the new client for its registrar and records `client.registered`. */
export async function registerClient(
  services: ControlPlaneServices,
  metadata: ClientMetadata,
  registrar: Registrar,
  options: RegisterOptions = {},
): Promise<ClientChange> {
  checkOperatorOnlyMetadata(metadata, registrar.ownerId);
  await checkOwnedResources(services, metadata, registrar.ownerId);
  await checkNamedOrgs(services, metadata, registrar.ownerId);
  await checkFetchedUris(services, metadata);
  const now = services.now();
  const secret = usesClientSecret(metadata.token_endpoint_auth_method) ? newSecret() : null;
  const token = newSecret();
  const client: StoredClient = {
    clientId: randomId('cl'),
    type: clientTypeOf(metadata.token_endpoint_auth_method),
    metadata,
    secretHash: secret?.hash ?? null,
    secretIssuedAt: secret ? now : null,
    ownerId: registrar.ownerId,
    registrationTokenHash: token.hash,
    revision: 1,
    createdAt: now,
    updatedAt: now,
  };
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.clients.insert(client);
    await options.onInsert?.(tx, client);
    return services.events.record(tx, {
      type: 'client.registered',
      at: now,
      outcome: 'success',
      // `by: session` named no one; the person who registered it acted (for an org too).
      actor: registrar.by === 'admin' ? { type: 'admin_token' } : { type: 'person', id: registrar.identityId },
      clientId: client.clientId,
      ownerId: client.ownerId,
      by: registrar.by,
      ...(options.actor ? { actor: options.actor } : {}),
      revision: 1,
      ...(options.connector ? { connector: options.connector } : {}),
    });
  });
  return {
    client,
    issued: { ...(secret ? { clientSecret: secret.value } : {}), registrationToken: token.value },
    ...(receipt ? { receipt } : {}),
  };
}

/**
 * Replaces the client's metadata if it is still at `revision` (one conditional update, so a
 * concurrent edit is a `stale_revision`) and records `client.updated`.
 */
export async function updateClient(
  services: ControlPlaneServices,
  client: StoredClient,
  revision: number,
  metadata: ClientMetadata,
  actor?: Actor,
  onUpdate?: (tx: Stores, client: StoredClient) => Promise<void>,
): Promise<ClientChange> {
  if (revision !== client.revision) staleRevision();
  checkOperatorOnlyMetadata(metadata, client.ownerId);
  await checkOwnedResources(services, metadata, client.ownerId);
  await checkNamedOrgs(services, metadata, client.ownerId);
  await checkFetchedUris(services, metadata);
  const now = services.now();
  const secret = secretAfterUpdate(client, metadata, now);
  const { updated, receipt } = await services.storage.transaction(async (tx) => {
    // A client registered for a project stays inside its signed trust profile (docs/rollout.md).
    await refuseOutsideProfile(tx, client.clientId, metadata);
    const stored = await tx.clients.update(client.clientId, revision, {
      type: clientTypeOf(metadata.token_endpoint_auth_method),
      metadata,
      secretHash: secret.hash,
      secretIssuedAt: secret.issuedAt,
      at: now,
    });
    // Another update won the race since we read the client.
    if (!stored) staleRevision();
    await onUpdate?.(tx, stored);
    const recorded = await services.events.record(tx, {
      type: 'client.updated',
      at: now,
      outcome: 'success',
      ...(actor ? { actor } : {}),
      clientId: client.clientId,
      revision: stored.revision,
      secretIssued: secret.value !== undefined,
    });
    return { updated: stored, receipt: recorded.receipt };
  });
  return {
    client: updated,
    issued: secret.value !== undefined ? { clientSecret: secret.value } : {},
    ...(receipt ? { receipt } : {}),
  };
}

/** The response body for a change: the client description plus its receipt. */
export function describeChange(
  services: Pick<ControlPlaneServices, 'config'>,
  change: ClientChange,
): Record<string, unknown> {
  return {
    ...describeClient(services, change.client, change.issued),
    ...(change.receipt ? { receipt: change.receipt } : {}),
  };
}

/** RFC 7592 §2.3: deletes the client and records `client.deleted`. */
export async function deleteClient(
  services: Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>,
  clientId: string,
): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.clients.remove(clientId))) throw fail('not_found', 'the client was deleted meanwhile');
    // Its refresh families end and its access tokens turn inactive at introspection and userinfo.
    await endGrantsOfClient(services, tx, clientId, now);
    return services.events.record(tx, { type: 'client.deleted', at: now, outcome: 'success', clientId });
  });
}
