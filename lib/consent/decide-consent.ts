/**
 * What a party asks to receive: OAuth scopes (or, for a SAML service provider, the attribute
 * sources its assertion carries) and the RFC 8707 resource a token would be for.
 */
export interface Release {
  scopes: readonly string[];
  resource?: string | undefined;
}

/** What the account approved for a party before: scopes (or attribute sources) and RFC 8707 resources, each a set. */
export interface Approval {
  scopes: readonly string[];
  resources: readonly string[];
}

/**
 * Whether an earlier approval covers the release: every requested scope, and the requested
 * resource (a token for a resource the user never saw named is never issued silently).
 */
export function coversRequest(approval: Approval | null, release: Release): boolean {
  if (!approval) return false;
  if (!release.scopes.every((scope) => approval.scopes.includes(scope))) return false;
  return release.resource === undefined || approval.resources.includes(release.resource);
}

/** Whether the account's identity may go to the party now, and why. */
export type ConsentStanding = { approved: true; by: 'first_party' | 'remembered' } | { approved: false };

/**
 * The one consent rule of every protocol that releases an account's identity (docs/security.md
 * "One consent gate"): a party the operator registered as first-party needs no approval; any
 * other needs an earlier approval by this account covering everything it now asks for (a scope,
 * attribute or resource the person never saw named is never released silently).
 */
export function decideConsent(input: {
  firstParty: boolean;
  approval: Approval | null;
  release: Release;
}): ConsentStanding {
  if (input.firstParty) return { approved: true, by: 'first_party' };
  if (coversRequest(input.approval, input.release)) return { approved: true, by: 'remembered' };
  return { approved: false };
}
