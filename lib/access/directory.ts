import { ORG_ROLES, type OrgRole } from '../orgs/roles.js';
import type { AccessAccount, AccessPrincipal, Membership } from './evaluate-access.js';

/**
 * What the gateway knows about accounts without asking (memberships reach the gateway in the
 * signed config's refresh, never by a call per request, so a request costs no round trip): every account that a
 * rule can name, with its username, its memberships in the orgs the rules name, and whether it is
 * disabled. An account absent from it belongs to none of those orgs.
 */
export interface AccessDirectory {
  identities: Record<string, { username?: string; orgs?: Membership[]; disabled?: true }>;
}

/** The account as the directory knows it; `emails` are what the caller's own credential states. */
export function accountFromDirectory(
  directory: AccessDirectory | undefined,
  id: string,
  emails: AccessAccount['emails'] = [],
): AccessAccount {
  const entry = directory?.identities[id];
  return {
    id,
    ...(entry?.username !== undefined ? { username: entry.username } : {}),
    ...(entry?.disabled === true ? { disabled: true } : {}),
    memberships: entry?.orgs ?? [],
    emails,
  };
}

/** The principal a gateway caller is: a human by its subject, an agent with its owner's account. */
export function principalFromDirectory(
  directory: AccessDirectory | undefined,
  caller: {
    principalType: 'human' | 'agent';
    subject: string;
    ownerId?: string;
    email?: string;
    emailVerified?: boolean;
  },
): AccessPrincipal {
  if (caller.principalType === 'agent')
    return {
      type: 'agent',
      id: caller.subject,
      owner: caller.ownerId === undefined ? null : accountFromDirectory(directory, caller.ownerId),
    };
  const emails = caller.email ? [{ address: caller.email, verified: caller.emailVerified === true }] : [];
  return { type: 'human', ...accountFromDirectory(directory, caller.subject, emails) };
}

/** Problems in a directory as it arrives in a signed config; empty when it is valid. */
export function checkAccessDirectory(value: unknown): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return ['access_directory must be an object'];
  const identities = (value as Record<string, unknown>)['identities'];
  if (!identities || typeof identities !== 'object' || Array.isArray(identities))
    return ['access_directory.identities must be an object'];
  const problems: string[] = [];
  for (const [id, entry] of Object.entries(identities as Record<string, unknown>)) {
    const where = `access_directory.identities.${id}`;
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) {
      problems.push(`${where} must be an object`);
      continue;
    }
    const { username, orgs, disabled } = entry as Record<string, unknown>;
    if (username !== undefined && typeof username !== 'string') problems.push(`${where}.username must be a string`);
    if (disabled !== undefined && disabled !== true) problems.push(`${where}.disabled must be true when present`);
    if (
      orgs !== undefined &&
      !(
        Array.isArray(orgs) &&
        orgs.every(
          (m) =>
            m &&
            typeof m === 'object' &&
            typeof (m as Membership).slug === 'string' &&
            ORG_ROLES.includes((m as Membership).role as OrgRole) &&
            ((m as Membership).teams === undefined ||
              (Array.isArray((m as Membership).teams) &&
                (m as Membership).teams!.every((team) => typeof team === 'string'))),
        )
      )
    )
      problems.push(`${where}.orgs must be a list of {slug, role, teams?}`);
  }
  return problems;
}
