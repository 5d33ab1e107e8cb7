import { ORG_ROLES, type OrgRole } from '../orgs/roles.js';

/**
 * Who may get in (docs/gateway.md#access-rules, docs/orgs.md#access-rules): `allow` rules are
 * data, evaluated here and nowhere else, by the gateway, forward auth and every sign-in path of
 * the control plane alike. Pure: the caller gathers the principal's memberships and verified
 * addresses; this says allow (and which rule matched) or deny (and why).
 */

/**
 * The `error_description` of an `access_denied` that means "this account is not admitted" (never
 * "the person declined"): the client's `access.orgs` refused it, or, for a gateway, none of its
 * session routes would admit it. The gateway tells the two apart by these (docs/gateway.md#access-rules).
 */
export const NOT_ADMITTED = 'this account is not a member of an organization this client admits';
export const NO_ROUTE_ADMITS = 'no route of this gateway admits this account';

export interface OrgRule {
  slug: string;
  /** Only these roles; absent: any member. `owner` is not implied by `admin`: list every role admitted. */
  roles?: OrgRole[];
  /** Only members of one of these teams of the org (team slugs); absent: any team or none. */
  teams?: string[];
}

/** A route's (or client's) `allow`: a principal matching any entry passes. */
export interface AllowRules {
  /** Identity ids (exact) or usernames (case-insensitive). */
  users?: string[];
  orgs?: OrgRule[];
  /** Domains of verified e-mail addresses, exact (a subdomain is another domain), case-insensitive. */
  email_domains?: string[];
  /** Agents whose owner belongs to one of these orgs. */
  agent_owners_in?: string[];
  /** Members of one of these teams, each `<org slug>/<team slug>` (the `groups` claim's form). */
  groups?: string[];
}

export interface Membership {
  slug: string;
  role: OrgRole;
  /** The slugs of the org's teams the account belongs to. */
  teams?: string[];
}

export interface AccessAccount {
  id: string;
  username?: string;
  disabled?: boolean;
  memberships: readonly Membership[];
  /** Only an address with `verified` exactly true ever counts. */
  emails?: readonly { address: string; verified: boolean }[];
}

/** A human is its account; an agent is its own id plus its owner's account. */
export type AccessPrincipal =
  ({ type: 'human' } & AccessAccount) | { type: 'agent'; id: string; owner: AccessAccount | null };

export type AccessMatch =
  | { rule: 'any_signed_in' }
  | { rule: 'users'; entry: string }
  | { rule: 'orgs'; slug: string; role: OrgRole; team?: string }
  | { rule: 'groups'; group: string }
  | { rule: 'email_domains'; domain: string }
  | { rule: 'agent_owners_in'; slug: string; role: OrgRole };

export type AccessRefusal = 'account_disabled' | 'owner_disabled' | 'no_rule_matched';

/**
 * A refusal says, when the rules name teams, which memberships would have admitted the principal
 * (`<org>/<team>`), so that `keyplane gateway explain` can name the team missing.
 */
export type AccessDecision =
  { allowed: true; match: AccessMatch } | { allowed: false; refusal: AccessRefusal; missingGroups?: string[] };

const fold = (value: string) => value.trim().toLowerCase();

/** The domain of an address, folded; null when it has none. */
function domainOf(address: string): string | null {
  const at = address.lastIndexOf('@');
  return at > 0 && at < address.length - 1 ? fold(address.slice(at + 1)).replace(/\.$/, '') : null;
}

function matchUsers(entries: readonly string[], id: string, username: string | undefined): AccessMatch | null {
  const name = username === undefined ? undefined : fold(username);
  // An id is compared exactly; anything else is a username, compared case-folded.
  const entry = entries.find((e) => e === id || (name !== undefined && fold(e) === name));
  return entry === undefined ? null : { rule: 'users', entry };
}

function matchOrgs(rules: readonly OrgRule[], memberships: readonly Membership[]): AccessMatch | null {
  for (const rule of rules) {
    const membership = memberships.find((m) => fold(m.slug) === fold(rule.slug));
    if (!membership) continue;
    if (rule.roles && rule.roles.length > 0 && !rule.roles.includes(membership.role)) continue;
    if (rule.teams === undefined) return { rule: 'orgs', slug: rule.slug, role: membership.role };
    const held = (membership.teams ?? []).map(fold);
    const team = rule.teams.find((t) => held.includes(fold(t)));
    if (team !== undefined) return { rule: 'orgs', slug: rule.slug, role: membership.role, team };
  }
  return null;
}

/** A group is `<org slug>/<team slug>`; null when the value has not that form. */
export function parseGroup(group: string): { org: string; team: string } | null {
  const slash = group.indexOf('/');
  if (slash <= 0 || slash === group.length - 1 || group.indexOf('/', slash + 1) !== -1) return null;
  return { org: group.slice(0, slash), team: group.slice(slash + 1) };
}

/** The `groups` claim of these memberships: `<org>/<team>` for every team held. */
export function groupsOf(memberships: readonly Membership[]): string[] {
  return memberships.flatMap((m) => (m.teams ?? []).map((team) => `${m.slug}/${team}`));
}

function matchGroups(groups: readonly string[], memberships: readonly Membership[]): AccessMatch | null {
  const held = groupsOf(memberships).map(fold);
  const group = groups.find((g) => held.includes(fold(g)));
  return group === undefined ? null : { rule: 'groups', group };
}

/** Every team the rules would admit by (`<org>/<team>`), for a refusal to name. */
function groupsNamedBy(rules: AllowRules): string[] {
  return [
    ...(rules.groups ?? []),
    ...(rules.orgs ?? []).flatMap((o) => (o.teams ?? []).map((team) => `${o.slug}/${team}`)),
  ];
}

function matchEmailDomains(domains: readonly string[], account: AccessAccount): AccessMatch | null {
  const verified = (account.emails ?? []).filter((e) => e.verified === true).map((e) => domainOf(e.address));
  const domain = domains.find((d) => verified.includes(fold(d).replace(/\.$/, '')));
  return domain === undefined ? null : { rule: 'email_domains', domain };
}

/**
 * Decides whether `principal` passes `rules`. Without rules any signed-in principal passes (a
 * route without `allow` keeps its meaning); a disabled account never passes, nor an agent
 * whose owner is disabled. With rules, the first matching entry decides, in the order users,
 * orgs, email_domains, agent_owners_in; human rules never admit an agent by its owner's
 * memberships (only `agent_owners_in` and its own id in `users` do).
 */
export function evaluateAccess(rules: AllowRules | undefined, principal: AccessPrincipal): AccessDecision {
  if (principal.type === 'human' && principal.disabled === true) return { allowed: false, refusal: 'account_disabled' };
  if (principal.type === 'agent' && principal.owner?.disabled === true)
    return { allowed: false, refusal: 'owner_disabled' };
  if (!rules) return { allowed: true, match: { rule: 'any_signed_in' } };
  const match =
    principal.type === 'human'
      ? (rules.users && matchUsers(rules.users, principal.id, principal.username)) ||
        (rules.orgs && matchOrgs(rules.orgs, principal.memberships)) ||
        (rules.groups && matchGroups(rules.groups, principal.memberships)) ||
        (rules.email_domains && matchEmailDomains(rules.email_domains, principal)) ||
        null
      : (rules.users && matchUsers(rules.users, principal.id, undefined)) ||
        agentOwnerMatch(rules.agent_owners_in, principal.owner);
  if (match) return { allowed: true, match };
  const missingGroups = principal.type === 'human' ? groupsNamedBy(rules) : [];
  return { allowed: false, refusal: 'no_rule_matched', ...(missingGroups.length > 0 ? { missingGroups } : {}) };
}

function agentOwnerMatch(slugs: readonly string[] | undefined, owner: AccessAccount | null): AccessMatch | null {
  if (!slugs || !owner) return null;
  const match = matchOrgs(
    slugs.map((slug) => ({ slug })),
    owner.memberships,
  );
  return match && match.rule === 'orgs' ? { rule: 'agent_owners_in', slug: match.slug, role: match.role } : null;
}

/** Every org slug the rules name (whose memberships an evaluation needs). */
export function orgsNamedBy(rules: AllowRules | undefined): string[] {
  if (!rules) return [];
  return [
    ...new Set([
      ...(rules.orgs ?? []).map((o) => fold(o.slug)),
      ...(rules.agent_owners_in ?? []).map(fold),
      ...(rules.groups ?? []).flatMap((g) => {
        const parsed = parseGroup(g);
        return parsed ? [fold(parsed.org)] : [];
      }),
    ]),
  ];
}

/** Problems in an `allow` value, each prefixed with `where`; empty when it is valid. */
export function checkAllowRules(value: unknown, where: string): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return [`${where} must be an object`];
  const rules = value as Record<string, unknown>;
  const problems: string[] = [];
  const known = ['users', 'orgs', 'email_domains', 'agent_owners_in', 'groups'];
  for (const key of Object.keys(rules)) if (!known.includes(key)) problems.push(`${where}.${key} is not a known key`);
  const isNameList = (list: unknown) =>
    Array.isArray(list) &&
    list.every((item) => typeof item === 'string' && item.trim().length > 0 && item.length <= 256);
  if (rules['users'] !== undefined && !isNameList(rules['users']))
    problems.push(`${where}.users must be a list of identity ids or usernames`);
  if (rules['email_domains'] !== undefined && !isNameList(rules['email_domains']))
    problems.push(`${where}.email_domains must be a list of domains`);
  else if (Array.isArray(rules['email_domains']) && (rules['email_domains'] as string[]).some((d) => d.includes('@')))
    problems.push(`${where}.email_domains must list domains, not addresses`);
  if (rules['agent_owners_in'] !== undefined && !isNameList(rules['agent_owners_in']))
    problems.push(`${where}.agent_owners_in must be a list of org slugs`);
  if (
    rules['groups'] !== undefined &&
    !(isNameList(rules['groups']) && (rules['groups'] as string[]).every((g) => parseGroup(g) !== null))
  )
    problems.push(`${where}.groups must be a list of "<org slug>/<team slug>"`);
  const orgs = rules['orgs'];
  if (orgs !== undefined) {
    if (!Array.isArray(orgs)) problems.push(`${where}.orgs must be a list of {slug, roles?}`);
    else
      orgs.forEach((entry, index) => {
        const at = `${where}.orgs[${index}]`;
        if (!entry || typeof entry !== 'object' || Array.isArray(entry))
          return problems.push(`${at} must be an object`);
        const org = entry as Record<string, unknown>;
        for (const key of Object.keys(org))
          if (key !== 'slug' && key !== 'roles' && key !== 'teams') problems.push(`${at}.${key} is not a known key`);
        if (typeof org['slug'] !== 'string' || org['slug'].length === 0)
          problems.push(`${at}.slug must be an org slug`);
        if (
          org['roles'] !== undefined &&
          !(Array.isArray(org['roles']) && org['roles'].every((r) => ORG_ROLES.includes(r as OrgRole)))
        )
          problems.push(`${at}.roles must list owner, admin and/or member`);
        if (org['teams'] !== undefined && !isNameList(org['teams'])) problems.push(`${at}.teams must list team slugs`);
        return undefined;
      });
  }
  return problems;
}

/**
 * Who a rule admits, as data: one part per kind of entry, in the order the rules list them. The
 * English sentence of the admin API and the CLI (`describeAllowRules`) and the pages' translated
 * wording (docs/i18n.md) are both built from these parts.
 */
export type AccessRulePart =
  | { kind: 'everyone' }
  | { kind: 'signed-in' }
  | { kind: 'accounts'; users: string[] }
  /** `roles` empty: any member of the org. */
  | { kind: 'org-members'; org: string; roles: OrgRole[]; teams?: string[] }
  | { kind: 'groups'; groups: string[] }
  | { kind: 'email-domains'; domains: string[] }
  | { kind: 'agents'; ownerOrgs: string[] }
  | { kind: 'nobody' };

/** The parts of an `allow` value (absent: any signed-in account; empty: nobody). */
export function accessRuleParts(rules: AllowRules | undefined): AccessRulePart[] {
  if (!rules) return [{ kind: 'signed-in' }];
  const parts: AccessRulePart[] = [];
  if (rules.users?.length) parts.push({ kind: 'accounts', users: [...rules.users] });
  for (const org of rules.orgs ?? [])
    parts.push({
      kind: 'org-members',
      org: org.slug,
      roles: [...(org.roles ?? [])],
      ...(org.teams ? { teams: [...org.teams] } : {}),
    });
  if (rules.groups?.length) parts.push({ kind: 'groups', groups: [...rules.groups] });
  if (rules.email_domains?.length) parts.push({ kind: 'email-domains', domains: [...rules.email_domains] });
  if (rules.agent_owners_in?.length) parts.push({ kind: 'agents', ownerOrgs: [...rules.agent_owners_in] });
  return parts.length > 0 ? parts : [{ kind: 'nobody' }];
}

/** The parts of a gateway route: a public route admits everyone; otherwise its `allow`. */
export function routeAccessParts(route: { public?: boolean; allow?: AllowRules }): AccessRulePart[] {
  return route.public === true ? [{ kind: 'everyone' }] : accessRuleParts(route.allow);
}

const list = (items: readonly string[]) =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;

function englishPart(part: AccessRulePart): string {
  switch (part.kind) {
    case 'everyone':
      return 'anyone (public)';
    case 'signed-in':
      return 'any signed-in account';
    case 'accounts':
      return `the accounts ${list(part.users)}`;
    case 'org-members': {
      const who = part.roles.length
        ? `${list(part.roles.map((r) => `${r}s`))} of the org ${part.org}`
        : `members of the org ${part.org}`;
      return part.teams ? `${who} in the team ${list(part.teams)}` : who;
    }
    case 'groups':
      return `members of the team ${list(part.groups)}`;
    case 'email-domains':
      return `accounts with a verified e-mail address at ${list(part.domains)}`;
    case 'agents':
      return `agents owned by members of ${list(part.ownerOrgs)}`;
    case 'nobody':
      return 'nobody (the rules are empty)';
  }
}

/** The rules in words, one English line per part (the admin API and `keyplane gateway explain`). */
export function describeAllowRules(rules: AllowRules | undefined): string[] {
  return accessRuleParts(rules).map(englishPart);
}

/**
 * Who passes a gateway route, in words: the one English phrasing shared by the admin API
 * (`GET /admin/gateways/{client_id}/rules`), `keyplane gateway rules` and `explain`. A public
 * route admits anyone; otherwise its `allow` (absent: any signed-in account). Pages render
 * `routeAccessParts` in the reader's language instead.
 */
export function describeRouteAccess(route: { public?: boolean; allow?: AllowRules }): string[] {
  return routeAccessParts(route).map(englishPart);
}

/** A decision in words: which rule admitted the principal, or why it was refused. */
export function describeAccessDecision(decision: AccessDecision): string {
  if (decision.allowed) {
    const m = decision.match;
    switch (m.rule) {
      case 'any_signed_in':
        return 'allowed: the route admits any signed-in account';
      case 'users':
        return `allowed by users: ${m.entry}`;
      case 'orgs':
        return `allowed by orgs: ${m.role} of ${m.slug}${m.team !== undefined ? ` in the team ${m.team}` : ''}`;
      case 'groups':
        return `allowed by groups: a member of the team ${m.group}`;
      case 'email_domains':
        return `allowed by email_domains: a verified address at ${m.domain}`;
      case 'agent_owners_in':
        return `allowed by agent_owners_in: the owner is ${m.role} of ${m.slug}`;
    }
  }
  switch (decision.refusal) {
    case 'account_disabled':
      return 'denied: the account is disabled';
    case 'owner_disabled':
      return "denied: the agent's owner is disabled";
    case 'no_rule_matched':
      return decision.missingGroups
        ? `denied: no allow rule matches (not a member of the team ${list(decision.missingGroups)})`
        : 'denied: no allow rule matches';
  }
}
