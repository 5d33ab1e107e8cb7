import { evaluateAccess, type AccessDecision, type AllowRules, type OrgRule } from '#lib/access/evaluate-access.js';
import type { InPlaceTransport } from '#lib/oauth/in-place.js';
import type { ControlPlaneServices } from '../context.js';

export type SignInAccessServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>;

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
  transport: InPlaceTransport | 'saml',
): Promise<AccessDecision> {
  if (!party.orgs) return { allowed: true, match: { rule: 'any_signed_in' } };
  const rules: AllowRules = { orgs: [...party.orgs] };
  const [identity, memberships] = await Promise.all([
    services.storage.identities.get(identityId),
    services.storage.orgs.listForMember(identityId),
  ]);
  const decision = evaluateAccess(rules, {
    type: 'human',
    id: identityId,
    ...(identity ? { username: identity.username } : {}),
    memberships: memberships.map(({ slug, role }) => ({ slug, role })),
  });
  if (!decision.allowed) {
    const refusal = decision.refusal;
    await services.storage.transaction((tx) =>
      services.events.record(tx, {
        type: 'signin.access_denied',
        at: services.now(),
        outcome: 'failure',
        client_id: party.id,
        transport,
        identityId,
        refusal,
      }),
    );
  }
  return decision;
}
