import { X509Certificate } from 'node:crypto';
import { checkAllowRules, type OrgRule } from '../access/evaluate-access.js';
import { fail } from '../errors/keyplane-error.js';
import { NAMEID_FORMAT } from './constants.js';

/**
 * A service provider's registration as the operator or an org admin sends it, checked and
 * normalised: exact ACS URLs (https, or http on a loopback host for development), a pinned
 * RSA certificate, the NameID format and the attribute mapping (docs/saml.md#attributes).
 */
export interface ProviderSettings {
  entityId: string;
  name: string | null;
  acsUrls: string[];
  sloUrl: string | null;
  certificatePem: string;
  nameIdFormat: string;
  attributes: Record<string, string>;
  allowIdpInitiated: boolean;
  wantSignedRequests: boolean;
  /** `access.orgs` (docs/saml.md#who-may-sign-in): only members of these orgs (in these roles); null: anyone. */
  accessOrgs: OrgRule[] | null;
}

/** What an attribute can be filled from. `email` is sent only when verified. */
export const ATTRIBUTE_SOURCES = ['sub', 'username', 'display_name', 'email', 'assurance', 'amr'] as const;
export type AttributeSource = (typeof ATTRIBUTE_SOURCES)[number];

export const DEFAULT_ATTRIBUTES: Record<string, AttributeSource> = {
  'urn:keyplane:attribute:username': 'username',
  'urn:keyplane:attribute:display-name': 'display_name',
  'urn:keyplane:attribute:assurance': 'assurance',
};

const NAMEID_FORMATS: Record<string, string> = {
  persistent: NAMEID_FORMAT.persistent,
  email: NAMEID_FORMAT.email,
  [NAMEID_FORMAT.persistent]: NAMEID_FORMAT.persistent,
  [NAMEID_FORMAT.email]: NAMEID_FORMAT.email,
};

const invalid = (message: string) => fail('invalid_request', message);
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** An endpoint URL of the SP: https, or http on a loopback host; no fragment, no credentials. */
export function checkEndpointUrl(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length > 2000) throw invalid(`${field} must be a URL`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(`${field} must be an absolute URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname))) {
    throw invalid(`${field} must use https (http only on localhost)`);
  }
  if (url.hash || url.username || url.password) throw invalid(`${field} must have no fragment or credentials`);
  return value;
}

/** A PEM certificate (or its bare base64 body) with an RSA key of at least 2048 bits, as PEM. */
export function checkCertificate(value: unknown): string {
  if (typeof value !== 'string' || value.length > 16_384) throw invalid('certificate must be a PEM X.509 certificate');
  const body = value.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) throw invalid('certificate must be a PEM X.509 certificate');
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(Buffer.from(body, 'base64'));
  } catch {
    throw invalid('certificate does not parse as X.509');
  }
  const key = certificate.publicKey;
  if (key.asymmetricKeyType !== 'rsa' || (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    throw invalid('certificate must carry an RSA key of at least 2048 bits (signatures are RSA-SHA256)');
  }
  return `-----BEGIN CERTIFICATE-----\n${body.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
}

function bool(value: unknown, field: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalid(`${field} must be true or false`);
  return value;
}

/** At most this many `access.orgs` entries (as for a client's). */
const ACCESS_ORGS_MAX = 500;

/**
 * `access: {orgs: [{slug, roles?}]}`, the same restriction as a client's `access.orgs`; slugs are
 * stored lower-cased. Absent, null or without `orgs`: any account may sign in, as before.
 */
export function checkProviderAccess(value: unknown): OrgRule[] | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid('access must be {"orgs": [{slug, roles?}]}');
  const { orgs, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw invalid(`access.${unknown[0]} is not a known key (only orgs)`);
  if (orgs === undefined || orgs === null) return null;
  if (!Array.isArray(orgs) || orgs.length === 0)
    throw invalid('access.orgs must be a non-empty list of {slug, roles?}');
  if (orgs.length > ACCESS_ORGS_MAX) throw invalid(`access.orgs has more than ${ACCESS_ORGS_MAX} entries`);
  const problems = checkAllowRules({ orgs }, 'access');
  if (problems.length > 0) throw invalid(problems.join('; '));
  return (orgs as OrgRule[]).map(({ slug, roles }) => ({ slug: slug.toLowerCase(), ...(roles ? { roles } : {}) }));
}

export function checkProviderSettings(input: Record<string, unknown>): ProviderSettings {
  const entityId = input.entity_id;
  if (typeof entityId !== 'string' || entityId.length === 0 || entityId.length > 1024 || /\s/.test(entityId)) {
    throw invalid("entity_id must be the SP's entityID (a URI without spaces, at most 1024 characters)");
  }
  const acs = input.acs_urls;
  if (!Array.isArray(acs) || acs.length === 0 || acs.length > 10)
    throw invalid('acs_urls must list 1 to 10 AssertionConsumerService URLs');
  const acsUrls = acs.map((url, i) => checkEndpointUrl(url, `acs_urls[${i}]`));
  if (new Set(acsUrls).size !== acsUrls.length) throw invalid('acs_urls has a duplicate');
  const sloUrl =
    input.slo_url === undefined || input.slo_url === null || input.slo_url === ''
      ? null
      : checkEndpointUrl(input.slo_url, 'slo_url');
  const format =
    input.name_id_format === undefined ? NAMEID_FORMAT.persistent : NAMEID_FORMATS[String(input.name_id_format)];
  if (!format)
    throw invalid('name_id_format must be persistent or emailAddress (the SAML URN or "persistent" / "email")');
  let attributes: Record<string, string> = { ...DEFAULT_ATTRIBUTES };
  if (input.attributes !== undefined) {
    const given = input.attributes;
    if (typeof given !== 'object' || given === null || Array.isArray(given))
      throw invalid('attributes must map SAML attribute names to sources');
    const entries = Object.entries(given as Record<string, unknown>);
    if (entries.length > 20) throw invalid('at most 20 attributes');
    attributes = {};
    for (const [name, source] of entries) {
      if (name.length === 0 || name.length > 256 || /\s/.test(name))
        throw invalid('an attribute name must be 1 to 256 characters without spaces');
      if (!(ATTRIBUTE_SOURCES as readonly unknown[]).includes(source))
        throw invalid(`attribute ${name}: the source must be one of ${ATTRIBUTE_SOURCES.join(', ')}`);
      attributes[name] = source as string;
    }
  }
  const name = input.name === undefined || input.name === null ? null : input.name;
  if (name !== null && (typeof name !== 'string' || name.trim().length === 0 || name.length > 100))
    throw invalid('name must be 1 to 100 characters');
  return {
    entityId,
    name: name === null ? null : name.trim(),
    acsUrls,
    sloUrl,
    certificatePem: checkCertificate(input.certificate),
    nameIdFormat: format,
    attributes,
    allowIdpInitiated: bool(input.allow_idp_initiated, 'allow_idp_initiated', false),
    wantSignedRequests: bool(input.want_signed_requests, 'want_signed_requests', true),
    accessOrgs: checkProviderAccess(input.access),
  };
}

/**
 * What an assertion to the provider releases, as attribute sources (docs/saml.md#consent): the
 * NameID's (`sub`, or `email` for an emailAddress NameID) and every mapped attribute's. This is
 * what an account approves, and an approval covers a later assertion only while it covers these.
 */
export function releasedSources(nameIdFormat: string, attributes: Record<string, string>): AttributeSource[] {
  const sources = new Set<string>([
    nameIdFormat === NAMEID_FORMAT.email ? 'email' : 'sub',
    ...Object.values(attributes),
  ]);
  return ATTRIBUTE_SOURCES.filter((source) => sources.has(source));
}

/** What an assertion releases, per attribute source, with the SAML names it is sent under. */
export function releaseParts(
  nameIdFormat: string,
  attributes: Record<string, string>,
): { source: AttributeSource; names: string[] }[] {
  const nameIdSource = nameIdFormat === NAMEID_FORMAT.email ? 'email' : 'sub';
  return releasedSources(nameIdFormat, attributes).map((source) => {
    const names = Object.entries(attributes)
      .filter(([, from]) => from === source)
      .map(([name]) => name);
    if (source === nameIdSource) names.unshift('NameID');
    return { source, names };
  });
}
