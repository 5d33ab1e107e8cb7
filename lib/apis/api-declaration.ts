import { fail } from '../errors/keyplane-error.js';
import { matchLocale } from '../i18n/negotiate-locale.js';
import { SOURCE_LOCALE, type Locale } from '../i18n/locales.js';
import { validateResourceForRegistration } from '../oauth/resource.js';
import { parseScope } from '../oauth/scope.js';

/**
 * An API (a resource server, RFC 8707 resource URI) with its own scopes (docs/apis.md). Scopes
 * are keyed by (resource, name): two APIs may both offer `items:read`, and a token for one
 * carries only that one's. Pure: the caller stores declarations and looks them up.
 */

/** A scope's description: plain text, or text per BCP 47 language tag (`{"en": …, "de": …}`). */
export type ScopeDescription = string | Readonly<Record<string, string>>;

export interface ApiScope {
  name: string;
  description: ScopeDescription;
}

export interface ApiDeclaration {
  resource: string;
  name: string;
  scopes: ApiScope[];
  /** Client ids admitted besides the owner's own clients; empty means only the owner's. */
  allowedClients: string[];
  /** Slugs of orgs whose clients are admitted. */
  allowedOrgs: string[];
}

/**
 * Names the provider itself interprets (OIDC Core §5.4, `orgs`, `groups`) or keeps for the Shared
 * Signals transmitter (`ssf.*`): no API may declare them, so a token's meaning never depends on
 * who declared what.
 */
export const RESERVED_SCOPES = ['openid', 'email', 'profile', 'orgs', 'groups', 'offline_access'] as const;
const RESERVED_PREFIX = 'ssf.';

export function isReservedScope(name: string): boolean {
  return (RESERVED_SCOPES as readonly string[]).includes(name) || name.startsWith(RESERVED_PREFIX);
}

const LIMITS = { scopes: 100, name: 100, description: 500, languages: 20, clients: 100, orgs: 50 };
const LANGUAGE_TAG = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;

function bad(message: string): never {
  throw fail('invalid_request', message);
}

function text(value: unknown, what: string, max: number): string {
  if (typeof value !== 'string' || value.trim().length === 0 || value.length > max)
    bad(`${what} must be a non-empty string of at most ${max} characters`);
  return value.trim();
}

function description(value: unknown, at: string): ScopeDescription {
  if (typeof value === 'string') return text(value, `${at}.description`, LIMITS.description);
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    bad(`${at}.description must be a string or an object of language tags to text`);
  const entries = Object.entries(value);
  if (entries.length === 0 || entries.length > LIMITS.languages)
    bad(`${at}.description must name 1 to ${LIMITS.languages} languages`);
  const out: Record<string, string> = {};
  for (const [tag, words] of entries) {
    if (!LANGUAGE_TAG.test(tag)) bad(`${at}.description: ${tag.slice(0, 20)} is not a language tag`);
    out[tag] = text(words, `${at}.description.${tag}`, LIMITS.description);
  }
  return out;
}

function list(value: unknown, what: string, max: number, check: (item: string) => boolean): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.length > max || value.some((item) => typeof item !== 'string' || !check(item)))
    bad(`${what} must be an array of at most ${max} ${what === 'allowed_orgs' ? 'org slugs' : 'client ids'}`);
  return [...new Set(value as string[])];
}

/**
 * Checks an API declaration as `POST /admin/apis` receives it: an https resource URI (http on
 * loopback), a name, 1 to 100 scopes with unique, well-formed, unreserved names (RFC 6749 §3.3
 * tokens) and a description each, and the optional admission lists. Throws `invalid_request`, or
 * `invalid_scope` for a reserved name.
 */
export function validateApiDeclaration(body: unknown): ApiDeclaration {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) bad('send the API as a JSON object');
  const raw = body as Record<string, unknown>;
  const problem = validateResourceForRegistration(raw.resource);
  if (problem !== null) bad(`resource ${problem}`);
  const resource = raw.resource as string;
  const name = text(raw.name, 'name', LIMITS.name);
  if (!Array.isArray(raw.scopes) || raw.scopes.length === 0 || raw.scopes.length > LIMITS.scopes)
    bad(`scopes must be an array of 1 to ${LIMITS.scopes} {name, description}`);
  const scopes: ApiScope[] = [];
  raw.scopes.forEach((entry: unknown, index) => {
    const at = `scopes[${index}]`;
    if (typeof entry !== 'object' || entry === null) bad(`${at} must be {name, description}`);
    const { name: scopeName, description: words } = entry as Record<string, unknown>;
    let tokens: string[] = [];
    try {
      tokens = parseScope(scopeName);
    } catch {
      bad(`${at}.name must be one scope token (RFC 6749 §3.3)`);
    }
    if (tokens.length !== 1 || (scopeName as string).length > LIMITS.name)
      bad(`${at}.name must be one scope token of at most ${LIMITS.name} characters`);
    const [token] = tokens as [string];
    if (isReservedScope(token))
      throw fail(
        'invalid_scope',
        `${at}.name ${token} is reserved: ${RESERVED_SCOPES.join(', ')} and ssf.* are the provider's`,
      );
    if (scopes.some((s) => s.name === token)) bad(`${at}.name ${token} is declared twice`);
    scopes.push({ name: token, description: description(words, at) });
  });
  return {
    resource,
    name,
    scopes,
    allowedClients: list(
      raw.allowed_clients,
      'allowed_clients',
      LIMITS.clients,
      (c) => c.length > 0 && c.length <= 2000,
    ),
    allowedOrgs: list(raw.allowed_orgs, 'allowed_orgs', LIMITS.orgs, (slug) => SLUG.test(slug)),
  };
}

/** Who owns an API, and who owns a client: the operator (null) or an org (`org_…`); a person owns only clients. */
export interface AdmissionFacts {
  apiOwnerOrgId: string | null;
  allowedClients: readonly string[];
  /** Org ids the API's `allowed_orgs` slugs name (resolved by the caller). */
  allowedOrgIds: readonly string[];
  clientId: string;
  /** The client's owner: null for the operator, an org id or an identity id. */
  clientOwnerId: string | null;
}

/**
 * Whether an API admits a client to ask for its scopes: the API owner's own clients (the
 * operator's for an operator API, the org's for an org API), the clients it lists, and the
 * clients owned by the orgs it lists. Nothing else: a person's own client is never admitted
 * by default, since the API's owner never vouched for it.
 */
export function apiAdmits(facts: AdmissionFacts): boolean {
  if (facts.allowedClients.includes(facts.clientId)) return true;
  if (facts.clientOwnerId === facts.apiOwnerOrgId) return true;
  return facts.clientOwnerId !== null && facts.allowedOrgIds.includes(facts.clientOwnerId);
}

/**
 * A description in the person's language: the exact locale, then its language alone, then
 * English, then the first one given (a plain string is the same in every language).
 */
export function describeScope(words: ScopeDescription, locale: Locale): string {
  if (typeof words === 'string') return words;
  const entries = Object.entries(words);
  const byLocale = (wanted: Locale) => entries.find(([tag]) => matchLocale(tag) === wanted)?.[1];
  const language = locale.split('-')[0]!;
  return (
    words[locale] ??
    byLocale(locale) ??
    entries.find(([tag]) => tag.toLowerCase() === language)?.[1] ??
    byLocale(SOURCE_LOCALE) ??
    entries[0]![1]
  );
}

/** Whether a resource URI lies under a domain: its host is the domain or one of its subdomains. */
export function resourceUnderDomain(resource: string, domain: string): boolean {
  let host: string;
  try {
    host = new URL(resource).hostname.toLowerCase();
  } catch {
    return false;
  }
  const wanted = domain.toLowerCase().replace(/\.$/, '');
  return host === wanted || host.endsWith(`.${wanted}`);
}

/**
 * The scopes a token for one resource may carry (RFC 8707 §2.2: scopes are interpreted by their
 * audience): the provider's own (`offline_access` aside, it means nothing to a resource server)
 * and those `declared` for that resource; any other is dropped.
 */
export function scopesForAudience(scopes: readonly string[], declared: readonly string[]): string[] {
  return keepDeclared(scopes, declared).filter((scope) => scope !== 'offline_access');
}

/** The scopes the provider interprets itself, and those `declared` for the token's resource. */
export function keepDeclared(scopes: readonly string[], declared: readonly string[]): string[] {
  return scopes.filter((scope) => isReservedScope(scope) || declared.includes(scope));
}
