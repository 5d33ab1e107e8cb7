/** A team's slug (docs/orgs.md#teams): `[a-z0-9-]{1,63}`, fixed at creation. */
const TEAM_SLUG = /^[a-z0-9-]{1,63}$/;

/** Whether `value` is a usable team slug. */
export function isTeamSlug(value: unknown): value is string {
  return typeof value === 'string' && TEAM_SLUG.test(value);
}

/**
 * A team slug made from a display name (a SCIM Group's `displayName`, whose slug is generated once
 * from it): ASCII letters folded to lower case, every run of anything else one dash, at most 63.
 */
export function teamSlugFrom(displayName: string): string {
  const slug = displayName
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/g, '');
  return slug.length > 0 ? slug : 'team';
}
