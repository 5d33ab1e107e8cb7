import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { MAX_XML_BYTES } from '#lib/saml/xml.js';
import { NAMEID_FORMAT } from '#lib/saml/constants.js';
import {
  buildAuthnRequestRedirect,
  buildLogoutRequestRedirect,
  buildSpMetadata,
  parseIdpMetadata,
} from '#lib/saml/service-provider.js';
import type { ControlPlaneServices } from '../context.js';
import type { SamlConnectionSettings, StoredConnection } from '../storage/interface.js';
import { samlKeyRing } from '../saml/key-ring.js';
import { fetchPolicyFor } from '../webhooks/outbox.js';

/**
 * Keyplane as a SAML 2.0 service provider of a connection's upstream IdP
 * (docs/federation.md#saml-connections): the IdP's metadata (XML given, or read from an https URL
 * through the guarded fetcher), the connection's own SP metadata, and the start of a sign-in: a
 * signed AuthnRequest by HTTP-Redirect whose ID waits in shared state for the response.
 */

export type SamlUpstreamServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'secrets' | 'fetcher' | 'now'
>;

/** An AuthnRequest waits this long for its response. */
const REQUEST_TTL_MS = 10 * 60_000;
/** Metadata given by URL is read again at the first sign-in after this long (a new certificate at the IdP). */
const METADATA_REFRESH_MS = 24 * 3_600_000;
const METADATA_TIMEOUT_MS = 10_000;

export function samlSettings(connection: StoredConnection): SamlConnectionSettings {
  return connection.settings as unknown as SamlConnectionSettings;
}

/** The connection's SP endpoints: its entityID is its metadata URL. */
export function spUrls(issuer: string, connectionId: string) {
  const base = `${issuer}/federation/${connectionId}/saml`;
  return {
    entityId: `${base}/metadata`,
    metadataUrl: `${base}/metadata`,
    acsUrl: `${base}/acs`,
    sloUrl: `${base}/slo`,
  };
}

export const samlRequestKey = (requestId: string) => `fed:saml-request:${sha256Hex(requestId)}`;

/** What a pending AuthnRequest keeps: the browser it was started in and where to go afterwards. */
export interface SamlRoundTrip {
  connectionId: string;
  /** SHA-256 of the browser's binding cookie. */
  binding: string;
  returnTo: string;
  testedBy?: string;
}

export interface SamlInput {
  metadata_xml?: unknown;
  metadata_url?: unknown;
  allow_idp_initiated?: unknown;
}

/** Reads the IdP's metadata from an https URL through the guarded fetcher. */
async function fetchMetadata(
  services: Pick<SamlUpstreamServices, 'config' | 'fetcher'>,
  orgId: string | null,
  url: string,
): Promise<string> {
  try {
    const fetched = await services.fetcher.fetch(url, {
      ...fetchPolicyFor(services.config, orgId, url),
      accept: 'application/samlmetadata+xml, application/xml, text/xml',
      maxBytes: MAX_XML_BYTES,
      timeoutMs: METADATA_TIMEOUT_MS,
    });
    if (fetched.status !== 200) throw fail('upstream_unreachable', `the IdP metadata URL answered ${fetched.status}`);
    return fetched.body.toString('utf8');
  } catch (error) {
    if (isKeyplaneError(error) && error.reason.startsWith('fetch_'))
      throw fail('upstream_unreachable', `the IdP metadata could not be read (${error.reason})`);
    throw error;
  }
}

/**
 * A SAML connection's settings from `saml: {metadata_xml? | metadata_url?, allow_idp_initiated?}`:
 * exactly one source of metadata (a URL must be https and is read now), or, on a change, none to
 * keep the current metadata.
 */
export async function checkSamlInput(
  services: Pick<SamlUpstreamServices, 'config' | 'fetcher' | 'now'>,
  orgId: string | null,
  input: SamlInput | undefined,
  current?: SamlConnectionSettings,
): Promise<SamlConnectionSettings> {
  const saml = input ?? {};
  if (typeof saml !== 'object' || saml === null) throw fail('invalid_request', 'saml is an object');
  const { metadata_xml: xml, metadata_url: url, allow_idp_initiated: idpInitiated } = saml;
  if (idpInitiated !== undefined && typeof idpInitiated !== 'boolean')
    throw fail('invalid_request', 'saml.allow_idp_initiated is true or false');
  if (xml !== undefined && url !== undefined)
    throw fail('invalid_request', 'saml takes metadata_xml or metadata_url, not both');
  const allowIdpInitiated = (idpInitiated as boolean | undefined) ?? current?.allowIdpInitiated ?? false;
  if (xml === undefined && url === undefined) {
    if (!current) throw fail('invalid_request', 'a SAML connection needs saml: {metadata_xml} or {metadata_url}');
    return { ...current, allowIdpInitiated };
  }
  let text: string;
  let metadataUrl: string | undefined;
  if (xml !== undefined) {
    if (typeof xml !== 'string' || xml.trim() === '') throw fail('invalid_request', 'saml.metadata_xml is the XML');
    text = xml;
  } else {
    let parsed: URL;
    try {
      parsed = new URL(String(url));
    } catch {
      throw fail('invalid_request', 'saml.metadata_url is an https URL');
    }
    if (parsed.protocol !== 'https:' || parsed.hash) throw fail('invalid_request', 'saml.metadata_url is an https URL');
    metadataUrl = parsed.href;
    text = await fetchMetadata(services, orgId, metadataUrl);
  }
  const metadata = parseIdpMetadata(text);
  return {
    idpEntityId: metadata.entityId,
    ssoUrl: metadata.ssoUrl,
    ...(metadata.sloUrl ? { sloUrl: metadata.sloUrl } : {}),
    certificatesPem: metadata.certificatesPem,
    certificatesNotAfter: metadata.certificatesNotAfter,
    ...(metadataUrl ? { metadataUrl } : {}),
    metadataReadAt: services.now(),
    allowIdpInitiated,
  };
}

/** `GET /federation/{connectionId}/saml/metadata`: the SP metadata to give the IdP; null for no SAML connection. */
export async function spMetadataOf(services: SamlUpstreamServices, connectionId: string): Promise<string | null> {
  const connection = await services.storage.connections.get(connectionId);
  if (!connection || connection.type !== 'saml') return null;
  const urls = spUrls(services.config.issuer, connectionId);
  return buildSpMetadata({
    entityId: urls.entityId,
    acsUrl: urls.acsUrl,
    sloUrl: urls.sloUrl,
    certificatesPem: await samlKeyRing(services).certificates(),
  });
}

/**
 * The connection's settings, its metadata read again from its URL when a day old. A failed read
 * keeps what the connection has (the IdP's certificates stay pinned) and tries again next time.
 */
async function freshSettings(
  services: SamlUpstreamServices,
  connection: StoredConnection,
): Promise<SamlConnectionSettings> {
  const current = samlSettings(connection);
  if (current.metadataUrl === undefined || services.now() - current.metadataReadAt < METADATA_REFRESH_MS)
    return current;
  let settings: SamlConnectionSettings;
  try {
    settings = await checkSamlInput(services, connection.orgId, { metadata_url: current.metadataUrl }, current);
  } catch (error) {
    if (isKeyplaneError(error)) return current;
    throw error;
  }
  await services.storage.connections.update({
    ...connection,
    settings: settings as unknown as Record<string, unknown>,
    updatedAt: Math.max(services.now(), connection.updatedAt + 1),
  });
  return settings;
}

/**
 * Starts a sign-in at the IdP: a signed AuthnRequest by HTTP-Redirect; its ID waits in shared
 * state (any replica or worker takes it once) with the browser's binding and where to go then.
 */
export async function samlAuthnRedirect(
  services: SamlUpstreamServices,
  connection: StoredConnection,
  trip: Omit<SamlRoundTrip, 'connectionId'>,
  options: { forceAuthn?: boolean } = {},
): Promise<string> {
  const settings = await freshSettings(services, connection);
  const urls = spUrls(services.config.issuer, connection.connectionId);
  const key = await samlKeyRing(services).current();
  const { url, requestId } = buildAuthnRequestRedirect({
    spEntityId: urls.entityId,
    acsUrl: urls.acsUrl,
    ssoUrl: settings.ssoUrl,
    now: services.now(),
    privateKeyPem: key.privateKeyPem,
    ...(options.forceAuthn ? { forceAuthn: true } : {}),
  });
  const stored: SamlRoundTrip = { connectionId: connection.connectionId, ...trip };
  await services.state.set(samlRequestKey(requestId), JSON.stringify(stored), REQUEST_TTL_MS);
  return url;
}

/** What a SAML sign-in keeps, sealed with its session, for the LogoutRequest at sign-out. */
export interface SamlUpstreamSubject {
  nameId: string;
  sessionIndex?: string;
}

/**
 * The IdP's SingleLogoutService URL with a signed LogoutRequest (HTTP-Redirect) naming the
 * session's NameID and SessionIndex, `relayState` naming where to go once the IdP answers at
 * `…/saml/slo`; null when the IdP's metadata names no SingleLogoutService.
 */
export async function samlLogoutRedirect(
  services: Pick<SamlUpstreamServices, 'config' | 'storage' | 'secrets' | 'now'>,
  connection: StoredConnection,
  subject: SamlUpstreamSubject,
  relayState: string,
): Promise<string | null> {
  const settings = samlSettings(connection);
  if (settings.sloUrl === undefined) return null;
  const key = await samlKeyRing(services).current();
  return buildLogoutRequestRedirect({
    spEntityId: spUrls(services.config.issuer, connection.connectionId).entityId,
    sloUrl: settings.sloUrl,
    nameId: subject.nameId,
    nameIdFormat: NAMEID_FORMAT.persistent,
    ...(subject.sessionIndex !== undefined ? { sessionIndex: subject.sessionIndex } : {}),
    relayState,
    now: services.now(),
    privateKeyPem: key.privateKeyPem,
  }).url;
}
