import { accountFromDirectory } from '#lib/access/directory.js';
import {
  describeAccessDecision,
  describeAllowRules,
  describeRouteAccess,
  evaluateAccess,
  type AccessDecision,
} from '#lib/access/evaluate-access.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { findRoute } from '#lib/gateway-protocol/policy.js';
import { findAccount } from '../accounts/lifecycle.js';
import type { ControlPlaneServices } from '../context.js';
import { accessDirectoryFor, currentGatewayConfig } from './issue-config.js';

export interface AccessExplanation {
  decision: 'allow' | 'deny';
  /** The deciding rule, or why none admitted the account, in words. */
  because: string;
  access: AccessDecision;
  identityId: string;
  username: string;
  /** The route that matched the path (longest prefix), null when none did. */
  route: { path: string; rules: string[] } | null;
  configVersion: number;
}

/**
 * `keyplane gateway explain` (docs/gateway.md#explaining-a-decision): whether the gateway client's
 * access rules admit an account on a path, and which rule decided, evaluated by the same pure
 * function against the same directory the gateway's next config holds. It explains who, not how:
 * the route's assurance, scopes and DPoP still apply to the request itself.
 */
export async function explainGatewayAccess(
  services: Pick<ControlPlaneServices, 'storage' | 'keys' | 'config' | 'events' | 'metrics' | 'now'>,
  clientId: string,
  userRef: string,
  path: string,
): Promise<AccessExplanation> {
  const client = await services.storage.clients.get(clientId);
  if (!client?.metadata.gateway) throw fail('not_found', 'no gateway client with this id');
  const account = await findAccount(services, userRef);
  const issued = await currentGatewayConfig(services, client);
  const route = findRoute(issued.policy.routes, path);
  const directory = await accessDirectoryFor(services.storage, issued.policy);
  const emails = (await services.storage.emails.listByIdentity(account.identityId)).map((e) => ({
    address: e.email,
    verified: e.verifiedAt !== null,
  }));
  const principal = {
    type: 'human' as const,
    ...accountFromDirectory(directory, account.identityId, emails),
    username: account.username,
    ...(account.state !== 'active' ? { disabled: true } : {}),
  };
  const access = route?.public
    ? ({ allowed: true, match: { rule: 'any_signed_in' } } as const)
    : evaluateAccess(route?.allow, principal);
  return {
    decision: access.allowed ? 'allow' : 'deny',
    because: route?.public ? 'allowed: the route is public' : describeAccessDecision(access),
    access,
    identityId: account.identityId,
    username: account.username,
    route: route ? { path: route.path, rules: describeRouteAccess(route) } : null,
    configVersion: issued.version,
  };
}

export interface GatewayRulesView {
  clientId: string;
  /** Who may sign in to the gateway's client at all (its `access.orgs`), in words; null: any account. */
  signIn: string[] | null;
  routes: Array<{ path: string; rules: string[] }>;
}

/**
 * `GET /admin/gateways/{client_id}/rules` and `keyplane gateway rules` (docs/gateway.md#seeing-the-rules):
 * each route of the declared policy (what the gateway's next config carries) with its rules in
 * words, in the same phrasing as the apps page.
 */
export async function gatewayRulesView(
  services: Pick<ControlPlaneServices, 'storage'>,
  clientId: string,
): Promise<GatewayRulesView> {
  const client = await services.storage.clients.get(clientId);
  if (!client?.metadata.gateway) throw fail('not_found', 'no gateway client with this id');
  const orgs = client.metadata.access.orgs;
  return {
    clientId: client.clientId,
    signIn: orgs ? describeAllowRules({ orgs }) : null,
    routes: client.metadata.gateway.routes.map((route) => ({ path: route.path, rules: describeRouteAccess(route) })),
  };
}
