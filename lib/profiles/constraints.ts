import { ASSURANCE_LEVELS, rankAssurance, type AssuranceLevel } from '../assurance/assurance.js';
import type { GatewayPolicy, PrincipalType, RoutePolicy } from '../gateway-protocol/policy.js';
import type { TrustProfile } from './documents.js';

/**
 * What a trust profile does to its client (docs/rollout.md#what-a-profile-constrains): the
 * registration may name only the redirect URIs and resources of its declared environments and
 * admit only the declared principals; the signed gateway config never asks for less than the
 * declared assurance.
 */

export function profileRedirectUris(profile: TrustProfile): string[] {
  return [...new Set(profile.environments.flatMap((environment) => environment.redirect_uris))];
}

export function profileResources(profile: TrustProfile): string[] {
  return [...new Set(profile.environments.flatMap((environment) => environment.resources))];
}

export interface ConstrainedMetadata {
  redirect_uris: readonly string[];
  resources: readonly string[];
  access: { humans: boolean; agents: boolean };
}

export interface ProfileViolation {
  field: 'redirect_uris' | 'resources' | 'access';
  message: string;
}

/** Every way the registration steps outside the profile; empty when it stays inside. */
export function checkMetadataAgainstProfile(metadata: ConstrainedMetadata, profile: TrustProfile): ProfileViolation[] {
  const problems: ProfileViolation[] = [];
  const environments = profile.environments.map((environment) => environment.name).join(', ');
  const redirects = new Set(profileRedirectUris(profile));
  for (const uri of metadata.redirect_uris) {
    if (!redirects.has(uri))
      problems.push({
        field: 'redirect_uris',
        message: `redirect URI ${uri} is in none of the profile's environments (${environments})`,
      });
  }
  const resources = new Set(profileResources(profile));
  for (const uri of metadata.resources) {
    if (!resources.has(uri))
      problems.push({
        field: 'resources',
        message: `resource ${uri} is in none of the profile's environments (${environments})`,
      });
  }
  if (metadata.access.agents && !profile.principals.agents)
    problems.push({ field: 'access', message: 'the profile admits no agents (principals.agents is false)' });
  if (metadata.access.humans && !profile.principals.humans)
    problems.push({ field: 'access', message: 'the profile admits no humans (principals.humans is false)' });
  return problems;
}

/** The principal types the profile admits, in the gateway's words. */
export function admittedPrincipals(profile: TrustProfile): PrincipalType[] {
  return [
    ...(profile.principals.humans ? ['human' as const] : []),
    ...(profile.principals.agents ? ['agent' as const] : []),
  ];
}

function atLeast(level: AssuranceLevel | undefined, floor: AssuranceLevel): AssuranceLevel {
  return level !== undefined && rankAssurance(level) >= rankAssurance(floor) ? level : floor;
}

/**
 * The policy a gateway gets when its client has a profile: every protected route asks for at
 * least `required_assurance` and admits only the declared principals, and a route `/` with that
 * floor stands in for unmatched paths (which otherwise demand only some caller). Public routes
 * stay public: declaring a path public is the registration's explicit choice.
 */
export function applyProfileToPolicy(policy: GatewayPolicy, profile: TrustProfile): GatewayPolicy {
  const floor = profile.required_assurance;
  const admitted = admittedPrincipals(profile);
  const restrict = (route: RoutePolicy): RoutePolicy => {
    if (route.public === true) return route;
    // A route for undeclared principals only keeps its list: their tokens are refused before they reach it.
    const principals = (route.principals ?? admitted).filter((principal) => admitted.includes(principal));
    return {
      ...route,
      min_assurance: atLeast(route.min_assurance, floor),
      principals: principals.length > 0 ? principals : (route.principals ?? admitted),
    };
  };
  const routes = policy.routes.map(restrict);
  if (!routes.some((route) => route.path === '/'))
    routes.push({ path: '/', min_assurance: floor, principals: admitted });
  return { ...policy, routes };
}

/** The weakest assurance a policy's protected routes ask for (null when every route is public). */
export function weakestRouteAssurance(policy: GatewayPolicy): AssuranceLevel | null {
  const levels = policy.routes
    .filter((route) => route.public !== true)
    .map((route) => route.min_assurance ?? ASSURANCE_LEVELS[0]!);
  if (levels.length === 0) return null;
  return levels.reduce((weakest, level) => (rankAssurance(level) < rankAssurance(weakest) ? level : weakest));
}
