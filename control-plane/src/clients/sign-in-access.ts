import {
  evaluateAccess,
  type AccessDecision,
  type AllowRules,
  type Membership,
  type OrgRule,
} from '#lib/access/evaluate-access.js';
import type { ControlPlaneServices } from '../context.js';
import { countedEmails } from '../orgs/claimed-addresses.js';
import type { AccessPath } from '../events/types.js';
import type { StoredClient, Stores } from '../storage/interface.js';

export type SignInAccessServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>;

/**
 * A party's `access.orgs` judged for one account by the one pure evaluation (the gateway's too),
 * read from `stores` (the storage, or a transaction that just changed a membership).
 */
export async function judgeAccess(
  stores: Pick<Stores, 'identities' | 'orgs' | 'teams'>,
  orgs: readonly OrgRule[] | undefined,
  identityId: string,
): Promise<AccessDecision> {
  if (!orgs) return { allowed: true, match: { rule: 'any_signed_in' } };
  const rules: AllowRules = { orgs: [...orgs] };
  const [identity, memberships] = await Promise.all([
    stores.identities.get(identityId),
    membershipsOf(stores, identityId),
  ]);
  return evaluateAccess(rules, {
    type: 'human',
    id: identityId,
    ...(identity ? { username: identity.username } : {}),
    memberships,
  });
}

/** The account's org memberships with the teams it holds in each, as the access evaluation reads them. */
export async function membershipsOf(stores: Pick<Stores, 'orgs' | 'teams'>, identityId: string): Promise<Membership[]> {
  const [orgs, teams] = await Promise.all([stores.orgs.listForMember(identityId), stores.teams.teamsOf(identityId)]);
  return orgs.map(({ slug, role }) => {
    const held = teams.filter((t) => t.orgSlug === slug).map((t) => t.teamSlug);
    return { slug, role, ...(held.length > 0 ? { teams: held } : {}) };
  });
}

/**
 * Who may sign in to a relying party (docs/orgs.md#who-may-sign-in-to-an-app): a client's
 * `access.orgs` (or a SAML provider's) admits only members of those orgs, in those roles, through
 * the same pure evaluation as the gateway's `allow`. A refusal leaves a `signin.access_denied`
 * receipt; the caller then tells the person why and answers the relying party `access_denied`.
 */
export async function checkSignInAccess(
  services: SignInAccessServices,
  party: { id: string; orgs: readonly OrgRule[] | undefined },
  identityId: string,
  transport: AccessPath,
): Promise<AccessDecision> {
  const decision = await judgeAccess(services.storage, party.orgs, identityId);
  await recordRefusal(services, party.id, identityId, transport, decision);
  return decision;
}

async function recordRefusal(
  services: SignInAccessServices,
  clientId: string,
  identityId: string,
  transport: AccessPath,
  decision: AccessDecision,
): Promise<void> {
  if (decision.allowed) return;
  const refusal = decision.refusal;
  await services.storage.transaction((tx) =>
    services.events.record(tx, {
      type: 'signin.access_denied',
      at: services.now(),
      outcome: 'failure',
      client_id: clientId,
      transport,
      identityId,
      refusal,
    }),
  );
}

/**
 * A gateway's session routes (sessionRouteRules) judged for one account before a consent page:
 * admitted when any route's rules admit it, by its memberships, username and the addresses that
 * count as verified. A refusal leaves `signin.access_denied` as the client's own rules do.
 */
export async function checkGatewayAdmission(
  services: SignInAccessServices,
  clientId: string,
  rules: readonly AllowRules[],
  identityId: string,
): Promise<AccessDecision> {
  const { storage } = services;
  const [identity, memberships, emails] = await Promise.all([
    storage.identities.get(identityId),
    membershipsOf(storage, identityId),
    storage.emails.listByIdentity(identityId),
  ]);
  const principal = {
    type: 'human' as const,
    id: identityId,
    ...(identity ? { username: identity.username } : {}),
    memberships,
    emails: (await countedEmails(storage, identity, emails)).map((e) => ({
      address: e.email,
      verified: e.verifiedAt !== null,
    })),
  };
  let decision: AccessDecision = { allowed: false, refusal: 'no_rule_matched' };
  for (const allow of rules) {
    decision = evaluateAccess(allow, principal);
    if (decision.allowed) return decision;
  }
  await recordRefusal(services, clientId, identityId, 'redirect', decision);
  return decision;
}

/**
 * May this person get a token for this client now? The one question every path that mints a
 * token for a person asks (docs/security.md#access-rules-on-every-path): the client's
 * `access.orgs`, read afresh each time, so a membership that ended stops new tokens at once.
 */
export function checkClientAccess(
  services: SignInAccessServices,
  client: StoredClient,
  identityId: string,
  path: AccessPath,
): Promise<AccessDecision> {
  return checkSignInAccess(services, { id: client.clientId, orgs: client.metadata.access.orgs }, identityId, path);
}
