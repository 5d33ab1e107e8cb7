import type { AccessRulePart } from '#lib/access/evaluate-access.js';
import type { MessageKey, Translator } from '#lib/i18n/translate.js';
import type { OrgRole } from '#lib/orgs/roles.js';

/**
 * Who may get in, in the reader's language (docs/i18n.md "What is translated"): the parts of
 * `accessRuleParts` / `routeAccessParts`, each a whole ICU message, and lists of names or of parts
 * joined by the language's own "or" (`Intl.ListFormat`). The admin API and the CLI keep the English
 * of `describeAllowRules`.
 */

/** Roles in the plural, as the subject of "… of the org acme". */
const ROLE_PLURALS: Record<OrgRole, MessageKey> = {
  owner: 'access.role.owners',
  admin: 'access.role.admins',
  member: 'access.role.members',
};

/** One part in words: plain text, escaped by the page's `html` template. */
export function accessRuleLine(ui: Translator, part: AccessRulePart): string {
  switch (part.kind) {
    case 'everyone':
      return ui.t('access.rule.everyone');
    case 'signed-in':
      return ui.t('access.rule.signed_in');
    case 'accounts':
      return ui.t('access.rule.accounts', { count: part.users.length, users: ui.orList(part.users) });
    case 'org-members': {
      const who = part.roles.length
        ? ui.t('access.rule.org_roles', {
            roles: ui.orList(part.roles.map((r) => ui.t(ROLE_PLURALS[r]))),
            org: part.org,
          })
        : ui.t('access.rule.org_members', { org: part.org });
      return part.teams ? ui.t('access.rule.in_teams', { who, teams: ui.orList(part.teams) }) : who;
    }
    case 'groups':
      return ui.t('access.rule.teams', { teams: ui.orList(part.groups) });
    case 'email-domains':
      return ui.t('access.rule.email_domains', { domains: ui.orList(part.domains) });
    case 'agents':
      return ui.t('access.rule.agents', { orgs: ui.orList(part.ownerOrgs) });
    case 'nobody':
      return ui.t('access.rule.nobody');
  }
}

/** All parts in one phrase: any of them admits, so they are alternatives. */
export function accessRuleText(ui: Translator, parts: readonly AccessRulePart[]): string {
  return ui.orList(parts.map((part) => accessRuleLine(ui, part)));
}
