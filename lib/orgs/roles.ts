import { isIP } from 'node:net';

export type OrgRole = 'member' | 'admin' | 'owner';
export const ORG_ROLES: readonly OrgRole[] = ['member', 'admin', 'owner'];
const RANK: Record<OrgRole, number> = { member: 0, admin: 1, owner: 2 };

/** Whether `role` is `needed` or stronger (owner > admin > member). */
export function hasRole(role: OrgRole, needed: OrgRole): boolean {
  return RANK[role] >= RANK[needed];
}

export type RoleChangeRefusal = 'forbidden' | 'last_owner' | null;

/**
 * The role rules (docs/orgs.md) for changing `target` from `from` to `to` (null: removing them):
 * management needs admin; only an owner grants, changes or removes the owner role; the last
 * owner is never demoted or removed.
 */
export function checkRoleChange(actor: OrgRole, from: OrgRole, to: OrgRole | null, owners: number): RoleChangeRefusal {
  if (!hasRole(actor, 'admin')) return 'forbidden';
  if ((from === 'owner' || to === 'owner') && actor !== 'owner') return 'forbidden';
  if (from === 'owner' && to !== 'owner' && owners <= 1) return 'last_owner';
  return null;
}

/** A URL-safe slug from an org name: lower-case ASCII letters, digits and single hyphens, 2 to 40 long. */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/g, '');
  return slug.length >= 2 ? slug : `org-${slug}`.replace(/-$/, '');
}

export type SiteUrlRefusal = 'not_https' | 'credentials' | 'ip_literal' | 'fragment' | 'malformed';

/**
 * A registered site's URL: absolute https with a host name (never an IP literal, which cannot
 * be proved by DNS), no credentials and no fragment. Returns the normalised URL.
 */
export function checkSiteUrl(
  raw: unknown,
): { ok: true; url: string; origin: string; host: string } | { ok: false; refusal: SiteUrlRefusal } {
  if (typeof raw !== 'string' || raw.length > 2048) return { ok: false, refusal: 'malformed' };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, refusal: 'malformed' };
  }
  if (url.protocol !== 'https:') return { ok: false, refusal: 'not_https' };
  if (url.username || url.password) return { ok: false, refusal: 'credentials' };
  if (url.hash || raw.includes('#')) return { ok: false, refusal: 'fragment' };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0) return { ok: false, refusal: 'ip_literal' };
  if (!host.includes('.') && host !== 'localhost') return { ok: false, refusal: 'malformed' };
  return { ok: true, url: url.href, origin: url.origin, host };
}

/** The value an org publishes to prove control of a site's domain. */
export function domainProofValue(token: string): string {
  return `keyplane-site=${token}`;
}

/** Whether `/.well-known/keyplane-site.txt` carries the proof value on a line of its own. */
export function wellKnownFileProves(body: string, token: string): boolean {
  const expected = domainProofValue(token);
  return body.split(/\r?\n/).some((line) => line.trim() === expected);
}
