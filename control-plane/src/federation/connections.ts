import { fail } from '#lib/errors/keyplane-error.js';
import { randomId } from '#lib/crypto/random.js';
import { checkFreeText } from '#lib/accounts/username.js';
import { isMultiTenantIssuer, type TenantPin } from '#lib/federation/upstream-identity.js';
import { checkMailDomain, domainOfAddress } from '#lib/orgs/mail-domain.js';
import type { ControlPlaneServices } from '../context.js';
import type { Actor } from '../events/types.js';
import type { OidcConnectionSettings, StoredConnection, Stores } from '../storage/interface.js';
import { enforceRequiredSso } from './required-sso.js';
import {
  backchannelLogoutUrl,
  callbackUrl,
  postLogoutRedirectUrl,
  connectionSecretContext,
  discover,
  generateConnectionKey,
  jwksUrl,
  oidcSettings,
} from './oidc-upstream.js';
import { checkSamlInput, samlSettings, spUrls, type SamlInput } from './saml-upstream.js';

/**
 * Connections (docs/federation.md): an org's (its owners at `sensitive`) and the operator's
 * instance-wide ones. Operations take the owner they act for; the routes decide who may act for
 * it. Secrets (a client secret, a private_key_jwt key) are sealed and never shown again.
 */

export type ConnectionServices = Pick<
  ControlPlaneServices,
  'storage' | 'events' | 'secrets' | 'fetcher' | 'config' | 'now'
>;

/** Who a connection operation acts for: the operator (`orgId` null) or one org, and who acted. */
export interface ConnectionOwner {
  orgId: string | null;
  actor: Actor;
}

export interface ConnectionInput {
  type?: unknown;
  name?: unknown;
  oidc?: {
    issuer?: unknown;
    client_id?: unknown;
    client_secret?: unknown;
    token_endpoint_auth_method?: unknown;
    scopes?: unknown;
    tenant?: { hd?: unknown; tid?: unknown };
  };
  saml?: SamlInput;
  domains?: unknown;
  jit?: { role?: unknown } | null;
  required?: unknown;
  session_max_hours?: unknown;
  max_assurance?: unknown;
}

/** What a connection looks like to its owner: never its secret. */
export interface ConnectionView {
  connectionId: string;
  type: StoredConnection['type'];
  name: string;
  orgId: string | null;
  oidc?: {
    issuer: string;
    client_id: string;
    token_endpoint_auth_method: OidcConnectionSettings['tokenEndpointAuthMethod'];
    scopes: string[];
    tenant?: TenantPin;
  };
  saml?: {
    idp_entity_id: string;
    sso_url: string;
    slo_url?: string;
    metadata_url?: string;
    certificates_not_after: string;
    allow_idp_initiated: boolean;
  };
  sp_entity_id?: string;
  acs_url?: string;
  sp_metadata_url?: string;
  domains: string[];
  jit: { role: 'member' } | null;
  required: boolean;
  session_max_hours: number;
  max_assurance: StoredConnection['maxAssurance'];
  redirect_uri: string;
  post_logout_redirect_uri?: string;
  backchannel_logout_uri?: string;
  jwks_uri?: string;
  createdAt: string;
  updatedAt: string;
}

export function connectionView(issuer: string, c: StoredConnection): ConnectionView {
  if (c.type === 'saml') return samlView(issuer, c);
  const settings = oidcSettings(c);
  return {
    connectionId: c.connectionId,
    type: c.type,
    name: c.name,
    orgId: c.orgId,
    ...(c.type === 'oidc'
      ? {
          oidc: {
            issuer: settings.issuer,
            client_id: settings.clientId,
            token_endpoint_auth_method: settings.tokenEndpointAuthMethod,
            scopes: settings.scopes,
            ...(settings.tenant ? { tenant: settings.tenant } : {}),
          },
        }
      : {}),
    domains: c.domains,
    jit: c.jit,
    required: c.required,
    session_max_hours: c.sessionMaxHours,
    max_assurance: c.maxAssurance,
    redirect_uri: callbackUrl(issuer, c.connectionId),
    ...(c.type === 'oidc'
      ? {
          post_logout_redirect_uri: postLogoutRedirectUrl(issuer, c.connectionId),
          backchannel_logout_uri: backchannelLogoutUrl(issuer, c.connectionId),
        }
      : {}),
    ...(settings.tokenEndpointAuthMethod === 'private_key_jwt' ? { jwks_uri: jwksUrl(issuer, c.connectionId) } : {}),
    createdAt: new Date(c.createdAt).toISOString(),
    updatedAt: new Date(c.updatedAt).toISOString(),
  };
}

function samlView(issuer: string, c: StoredConnection): ConnectionView {
  const settings = samlSettings(c);
  const sp = spUrls(issuer, c.connectionId);
  return {
    connectionId: c.connectionId,
    type: c.type,
    name: c.name,
    orgId: c.orgId,
    saml: {
      idp_entity_id: settings.idpEntityId,
      sso_url: settings.ssoUrl,
      ...(settings.sloUrl !== undefined ? { slo_url: settings.sloUrl } : {}),
      ...(settings.metadataUrl !== undefined ? { metadata_url: settings.metadataUrl } : {}),
      certificates_not_after: new Date(settings.certificatesNotAfter).toISOString(),
      allow_idp_initiated: settings.allowIdpInitiated,
    },
    sp_entity_id: sp.entityId,
    acs_url: sp.acsUrl,
    sp_metadata_url: sp.metadataUrl,
    domains: c.domains,
    jit: c.jit,
    required: c.required,
    session_max_hours: c.sessionMaxHours,
    max_assurance: c.maxAssurance,
    // Where the IdP sends the browser back: the ACS.
    redirect_uri: sp.acsUrl,
    createdAt: new Date(c.createdAt).toISOString(),
    updatedAt: new Date(c.updatedAt).toISOString(),
  };
}

const ENTRA_SHARED = /^https:\/\/login\.microsoftonline\.com\/(common|organizations|consumers)\/v2\.0\/?$/i;
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]{1,64}$/;

function text(input: unknown, what: string, max: number): string {
  if (typeof input !== 'string' || input.trim() === '') throw fail('invalid_request', `${what} is required`);
  return checkFreeText(input, max, 'invalid_request', what);
}

function checkTenantPin(input: { hd?: unknown; tid?: unknown } | undefined): TenantPin | undefined {
  if (input === undefined || input === null) return undefined;
  const pin: TenantPin = {};
  if (input.hd !== undefined) pin.hd = text(input.hd, 'tenant.hd', 253).toLowerCase();
  if (input.tid !== undefined) {
    const tid = text(input.tid, 'tenant.tid', 64);
    if (!/^[0-9a-f-]{36}$/i.test(tid)) throw fail('invalid_request', 'tenant.tid is an Entra tenant id (a GUID)');
    pin.tid = tid.toLowerCase();
  }
  if (pin.hd === undefined && pin.tid === undefined) throw fail('invalid_request', 'tenant names hd or tid');
  return pin;
}

function checkScopes(input: unknown): string[] {
  if (input === undefined) return ['openid', 'email', 'profile'];
  if (!Array.isArray(input) || input.length > 20 || !input.every((s) => typeof s === 'string' && SCOPE.test(s)))
    throw fail('invalid_request', 'scopes is a list of scope names');
  const scopes = [...new Set(input as string[])];
  return scopes.includes('openid') ? scopes : ['openid', ...scopes];
}

/** The issuer, an https URL; Entra's shared endpoints pinned to a tenant become that tenant's own issuer. */
function checkIssuer(input: unknown, tenant: TenantPin | undefined, instanceWide: boolean): string {
  const issuer = text(input, 'oidc.issuer', 2048);
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw fail('invalid_request', 'oidc.issuer is an https URL');
  }
  if (url.protocol !== 'https:' || url.search || url.hash) throw fail('invalid_request', 'oidc.issuer is an https URL');
  if (tenant?.tid !== undefined && ENTRA_SHARED.test(issuer))
    return `https://login.microsoftonline.com/${tenant.tid}/v2.0`;
  if (!instanceWide && tenant === undefined && isMultiTenantIssuer(issuer)) throw multiTenant();
  return issuer;
}

const multiTenant = () =>
  fail(
    'multi_tenant_issuer',
    'this issuer signs in accounts of any tenant (Google without hd, Entra common or organizations); pin the connection with tenant: {hd} or {tid}',
  );

/** Each domain a proved mail domain of this org (never a site proof, never another org's). */
async function checkDomains(storage: Pick<Stores, 'orgs'>, orgId: string, input: unknown): Promise<string[]> {
  if (input === undefined) return [];
  if (!Array.isArray(input) || input.length > 50) throw fail('invalid_request', 'domains is a list of mail domains');
  const domains: string[] = [];
  for (const raw of input) {
    const checked = checkMailDomain(raw);
    if (!checked.ok) throw fail('invalid_request', `the mail domain is not usable (${checked.refusal})`);
    const holder = await storage.orgs.mailDomainHolder(checked.domain);
    if (!holder || holder.orgId !== orgId)
      throw fail('domain_not_verified', `${checked.domain} is not a proved mail domain of this organization`, {
        fields: { cause: 'not_published' },
      });
    if (!domains.includes(checked.domain)) domains.push(checked.domain);
  }
  return domains;
}

interface OrgPowers {
  domains: string[];
  jit: StoredConnection['jit'];
  required: boolean;
  sessionMaxHours: number;
  maxAssurance: StoredConnection['maxAssurance'];
}

/** Domains, JIT and `required` are an org's; `max_assurance: passkey` is the operator's alone. */
async function checkPowers(
  services: ConnectionServices,
  owner: ConnectionOwner,
  input: ConnectionInput,
  current?: OrgPowers,
): Promise<OrgPowers> {
  const instanceWide = owner.orgId === null;
  if (
    instanceWide &&
    (input.domains !== undefined ||
      (input.jit ?? null) !== null ||
      input.required === true ||
      input.session_max_hours !== undefined)
  )
    throw fail('invalid_request', 'an instance-wide connection takes no domains, jit, required or session_max_hours');
  if (input.jit !== undefined && input.jit !== null && input.jit.role !== 'member')
    throw fail('invalid_request', 'jit is {"role": "member"}');
  if (input.required !== undefined && typeof input.required !== 'boolean')
    throw fail('invalid_request', 'required is true or false');
  const hours = input.session_max_hours;
  if (hours !== undefined && (typeof hours !== 'number' || !Number.isInteger(hours) || hours < 1 || hours > 12))
    throw fail('invalid_request', 'session_max_hours is a whole number of hours from 1 to 12');
  if (input.max_assurance !== undefined && input.max_assurance !== 'email' && input.max_assurance !== 'passkey')
    throw fail('invalid_request', 'max_assurance is email or passkey');
  if (input.max_assurance === 'passkey' && !instanceWide && owner.actor.type !== 'admin_token')
    throw fail('forbidden', 'only the operator may let a connection reach passkey assurance');
  return {
    domains:
      owner.orgId === null || input.domains === undefined
        ? (current?.domains ?? [])
        : await checkDomains(services.storage, owner.orgId, input.domains),
    jit: input.jit === undefined ? (current?.jit ?? null) : input.jit === null ? null : { role: 'member' },
    required: (input.required as boolean | undefined) ?? current?.required ?? false,
    sessionMaxHours: (hours as number | undefined) ?? current?.sessionMaxHours ?? 12,
    maxAssurance:
      (input.max_assurance as StoredConnection['maxAssurance'] | undefined) ?? current?.maxAssurance ?? 'email',
  };
}

async function recordConnectionEvent(
  services: ConnectionServices,
  tx: Stores,
  owner: ConnectionOwner,
  type: 'connection.created' | 'connection.updated' | 'connection.deleted',
  connectionId: string,
): Promise<string | undefined> {
  const { receipt } = await services.events.record(tx, {
    type,
    at: services.now(),
    outcome: 'success',
    actor: owner.actor,
    connectionId,
    orgId: owner.orgId,
  });
  return receipt;
}

/**
 * Adds an OIDC connection: checks the owner's powers, discovers the upstream (its document's
 * `issuer` must be the one given, and a multi-tenant one is refused for an org without `tenant`),
 * and for `private_key_jwt` makes the connection's own key.
 */
export async function createConnection(
  services: ConnectionServices,
  owner: ConnectionOwner,
  input: ConnectionInput,
): Promise<{ connection: StoredConnection; receipt?: string }> {
  if (input.type === 'saml') return createSamlConnection(services, owner, input);
  if (input.type !== 'oidc') throw fail('invalid_request', 'type is oidc or saml');
  const name = text(input.name, 'name', 100);
  const o = input.oidc;
  if (!o || typeof o !== 'object') throw fail('invalid_request', 'an OIDC connection needs oidc: {issuer, client_id}');
  const instanceWide = owner.orgId === null;
  const tenant = checkTenantPin(o.tenant);
  const issuer = checkIssuer(o.issuer, tenant, instanceWide);
  const clientId = text(o.client_id, 'oidc.client_id', 255);
  const method = o.token_endpoint_auth_method ?? 'client_secret_basic';
  if (method !== 'client_secret_basic' && method !== 'private_key_jwt')
    throw fail('invalid_request', 'token_endpoint_auth_method is client_secret_basic or private_key_jwt');
  const powers = await checkPowers(services, owner, input);
  const connectionId = randomId('con');
  let secret: string;
  let publicJwk: Record<string, unknown> | undefined;
  if (method === 'private_key_jwt') {
    const key = await generateConnectionKey();
    secret = JSON.stringify(key.privateJwk);
    publicJwk = key.publicJwk as Record<string, unknown>;
  } else {
    secret = text(o.client_secret, 'oidc.client_secret', 1024);
  }
  const settings: OidcConnectionSettings = {
    issuer,
    clientId,
    tokenEndpointAuthMethod: method,
    scopes: checkScopes(o.scopes),
    ...(tenant ? { tenant } : {}),
    ...(publicJwk ? { publicJwk } : {}),
  };
  const now = services.now();
  const connection: StoredConnection = {
    connectionId,
    orgId: owner.orgId,
    type: 'oidc',
    name,
    settings: settings as unknown as Record<string, unknown>,
    secretSealed: services.secrets.seal(connectionSecretContext(connectionId), secret),
    ...powers,
    createdAt: now,
    updatedAt: now,
  };
  // Last: it reaches the upstream.
  const discovered = await discover(services, connection, settings);
  if (!instanceWide && tenant === undefined && isMultiTenantIssuer(discovered.serverMetadata().issuer))
    throw multiTenant();
  const receipt = await services.storage.transaction(async (tx) => {
    await tx.connections.insert(connection);
    const receipt = await recordConnectionEvent(services, tx, owner, 'connection.created', connectionId);
    await enforceRequiredSso(services, tx, owner, connection);
    return receipt;
  });
  return { connection, ...(receipt ? { receipt } : {}) };
}

/** Adds a SAML connection: the IdP's metadata (XML given, or read now from its https URL) and the owner's powers. */
async function createSamlConnection(
  services: ConnectionServices,
  owner: ConnectionOwner,
  input: ConnectionInput,
): Promise<{ connection: StoredConnection; receipt?: string }> {
  const name = text(input.name, 'name', 100);
  if (input.oidc !== undefined) throw fail('invalid_request', 'a SAML connection takes saml, not oidc');
  const powers = await checkPowers(services, owner, input);
  const settings = await checkSamlInput(services, owner.orgId, input.saml);
  const now = services.now();
  const connection: StoredConnection = {
    connectionId: randomId('con'),
    orgId: owner.orgId,
    type: 'saml',
    name,
    settings: settings as unknown as Record<string, unknown>,
    secretSealed: null,
    ...powers,
    createdAt: now,
    updatedAt: now,
  };
  const receipt = await services.storage.transaction(async (tx) => {
    await tx.connections.insert(connection);
    return recordConnectionEvent(services, tx, owner, 'connection.created', connection.connectionId);
  });
  return { connection, ...(receipt ? { receipt } : {}) };
}

/** The owner's connection; another owner's, or none, is the same 404. */
export async function ownedConnection(
  services: Pick<ConnectionServices, 'storage'>,
  owner: Pick<ConnectionOwner, 'orgId'>,
  connectionId: string,
): Promise<StoredConnection> {
  const connection = await services.storage.connections.get(connectionId);
  if (!connection || connection.orgId !== owner.orgId) throw fail('not_found', 'no such connection');
  return connection;
}

export function listConnections(
  services: Pick<ConnectionServices, 'storage'>,
  owner: Pick<ConnectionOwner, 'orgId'>,
): Promise<StoredConnection[]> {
  return services.storage.connections.list(owner.orgId);
}

/** Changes the name, client secret, scopes, domains, JIT, `required` or maximum assurance. */
export async function updateConnection(
  services: ConnectionServices,
  owner: ConnectionOwner,
  connectionId: string,
  input: ConnectionInput,
): Promise<{ connection: StoredConnection; receipt?: string }> {
  const current = await ownedConnection(services, owner, connectionId);
  if (input.type !== undefined && input.type !== current.type)
    throw fail('invalid_request', 'the type of a connection is fixed: add a new connection');
  if (current.type === 'saml') return updateSamlConnection(services, owner, current, input);
  const settings = oidcSettings(current);
  const o = input.oidc ?? {};
  // Sent again unchanged (a PUT of the whole connection) they are fine; changed, they make another connection.
  if (
    (o.issuer !== undefined && o.issuer !== settings.issuer) ||
    (o.client_id !== undefined && o.client_id !== settings.clientId) ||
    (o.token_endpoint_auth_method !== undefined && o.token_endpoint_auth_method !== settings.tokenEndpointAuthMethod)
  )
    throw fail('invalid_request', 'the issuer, client id and authentication method are fixed: add a new connection');
  const powers = await checkPowers(services, owner, input, current);
  let secretSealed = current.secretSealed;
  if (o.client_secret !== undefined) {
    if (settings.tokenEndpointAuthMethod !== 'client_secret_basic')
      throw fail('invalid_request', 'this connection authenticates with its own key, not a client secret');
    secretSealed = services.secrets.seal(
      connectionSecretContext(connectionId),
      text(o.client_secret, 'oidc.client_secret', 1024),
    );
  }
  const connection: StoredConnection = {
    ...current,
    name: input.name === undefined ? current.name : text(input.name, 'name', 100),
    settings: {
      ...current.settings,
      ...(o.scopes !== undefined ? { scopes: checkScopes(o.scopes) } : {}),
    },
    secretSealed,
    ...powers,
    updatedAt: Math.max(services.now(), current.updatedAt + 1),
  };
  const receipt = await services.storage.transaction(async (tx) => {
    await tx.connections.update(connection);
    const receipt = await recordConnectionEvent(services, tx, owner, 'connection.updated', connectionId);
    await enforceRequiredSso(services, tx, owner, connection);
    return receipt;
  });
  return { connection, ...(receipt ? { receipt } : {}) };
}

async function updateSamlConnection(
  services: ConnectionServices,
  owner: ConnectionOwner,
  current: StoredConnection,
  input: ConnectionInput,
): Promise<{ connection: StoredConnection; receipt?: string }> {
  if (input.oidc !== undefined) throw fail('invalid_request', 'a SAML connection takes saml, not oidc');
  const powers = await checkPowers(services, owner, input, current);
  const settings = await checkSamlInput(services, owner.orgId, input.saml, samlSettings(current));
  const connection: StoredConnection = {
    ...current,
    name: input.name === undefined ? current.name : text(input.name, 'name', 100),
    settings: settings as unknown as Record<string, unknown>,
    ...powers,
    updatedAt: Math.max(services.now(), current.updatedAt + 1),
  };
  const receipt = await services.storage.transaction(async (tx) => {
    await tx.connections.update(connection);
    return recordConnectionEvent(services, tx, owner, 'connection.updated', current.connectionId);
  });
  return { connection, ...(receipt ? { receipt } : {}) };
}

/** Deletes the connection and its links; the accounts it created stay, managed by the org. */
export async function deleteConnection(
  services: ConnectionServices,
  owner: ConnectionOwner,
  connectionId: string,
): Promise<{ receipt?: string }> {
  await ownedConnection(services, owner, connectionId);
  const receipt = await services.storage.transaction(async (tx) => {
    if (!(await tx.connections.remove(connectionId))) throw fail('not_found', 'no such connection');
    return recordConnectionEvent(services, tx, owner, 'connection.deleted', connectionId);
  });
  return receipt ? { receipt } : {};
}

/** The public key a connection's upstream verifies its private_key_jwt assertions with (none for a client secret). */
export async function connectionJwks(
  services: Pick<ConnectionServices, 'storage'>,
  connectionId: string,
): Promise<{ keys: Array<Record<string, unknown>> }> {
  const connection = await services.storage.connections.get(connectionId);
  const jwk = connection?.type === 'oidc' ? oidcSettings(connection).publicJwk : undefined;
  return { keys: jwk ? [jwk] : [] };
}

/** A connection by id for the sign-in page's button; null for an unknown one. */
export async function offeredConnection(
  services: Pick<ConnectionServices, 'storage'>,
  connectionId: string,
): Promise<{ connectionId: string; name: string } | null> {
  if (!/^con_[A-Za-z0-9_-]{1,64}$/.test(connectionId)) return null;
  const connection = await services.storage.connections.get(connectionId);
  return connection ? { connectionId: connection.connectionId, name: connection.name } : null;
}

/**
 * Home-realm discovery (docs/federation.md#home-realm-discovery): the org connection whose
 * domains hold the address's domain, decided by the domain alone, never by whether an account exists.
 */
export async function discoverConnection(
  services: Pick<ConnectionServices, 'storage'>,
  email: string,
): Promise<{ connectionId: string; name: string } | null> {
  const domain = domainOfAddress(email.trim().toLowerCase());
  const connection = domain === null ? null : await services.storage.connections.forDomain(domain);
  return connection ? { connectionId: connection.connectionId, name: connection.name } : null;
}
