import { createHash } from 'node:crypto';
import { principalFromDirectory, type AccessDirectory } from '../access/directory.js';
import { evaluateAccess, type AccessDecision, type AllowRules } from '../access/evaluate-access.js';
import { isAssuranceLevel, meetsAssurance, type AssuranceLevel } from '../assurance/assurance.js';
import { findRoute } from './request-path.js';

export { findRoute, pathSegments } from './request-path.js';

/**
 * Per-route policy of the gateway (docs/gateway.md#policy): the `gateway` member of the
 * gateway client's registration metadata. Pure: the caller says who is asking; this says
 * whether they may, and whether the answer is enforced (observe / canary / enforce).
 */

export type GatewayMode = 'observe' | 'canary' | 'enforce';
export type PrincipalType = 'human' | 'agent';

export interface RoutePolicy {
  path: string;
  min_assurance?: AssuranceLevel;
  principals?: PrincipalType[];
  scopes?: string[];
  dpop?: 'required' | 'allowed';
  public?: boolean;
  /**
   * The resource (RFC 8707) that access tokens for this route must name as `aud`; set by the
   * control plane when `<gateway public URL><path>` is one of the client's registered resources.
   * Without it the gateway's public URL is the audience.
   */
  resource?: string;
  /** Who may pass (docs/gateway.md#access-rules): any matching entry; absent, any signed-in principal. */
  allow?: AllowRules;
  /**
   * An MCP endpoint (docs/mcp.md#protect-an-mcp-server-with-the-gateway): no usable token is a 401
   * naming its protected resource metadata (RFC 9728), never a redirect, and any client's token for
   * its resource `<public URL><path>` is accepted.
   */
  mcp?: boolean;
  /** MCP routes only: rules a JSON-RPC `tools/call` of the named tool must meet besides the route's. */
  tools?: Record<string, ToolRule>;
  /** MCP routes only: pass the caller's `Authorization` and `DPoP` headers to the app (kept at the edge by default). */
  forward_token?: boolean;
}

/** What one MCP tool demands (docs/gateway.md#mcp-routes). */
export interface ToolRule {
  /** Scopes of the route's resource a call of this tool needs besides the route's (docs/apis.md#gateways-declare-their-scopes). */
  scopes?: string[];
  min_assurance?: AssuranceLevel;
  allow?: AllowRules;
}

export interface GatewayPolicy {
  mode: GatewayMode;
  canary_percent?: number;
  /** Clients besides the gateway's own whose access tokens it accepts (default: none). */
  accept_clients?: string[];
  routes: RoutePolicy[];
}

/**
 * The rules of the routes a person signs in to this gateway for (neither public nor MCP, which
 * take tokens), when together they leave someone out: null when the gateway does not enforce, has
 * no such route, or one of them admits anyone signed in. The control plane asks them before a
 * consent page (docs/gateway.md#access-rules): nobody approves an app no route would let them into.
 */
export function sessionRouteRules(policy: GatewayPolicy): AllowRules[] | null {
  if (policy.mode !== 'enforce') return null;
  const routes = policy.routes.filter((route) => route.public !== true && route.mcp !== true);
  if (routes.length === 0 || routes.some((route) => route.allow === undefined)) return null;
  return routes.map((route) => route.allow!);
}

/** The caller as the gateway established it: from its session cookie or a verified token. */
export interface Caller {
  kind: 'session' | 'bearer' | 'dpop';
  subject: string;
  principalType: PrincipalType;
  assurance: AssuranceLevel;
  /** Granted scopes; a session carries those of its access token. */
  scopes: readonly string[];
  /** Stable id for the canary bucket: the session id, else the subject. */
  bucketId: string;
  /** RFC 8693 `act`: who acts for the subject (an exchanged token), newest first. */
  actors?: readonly string[];
  /** An agent's owner (`svc.principal.owner`): `agent_owners_in` is decided by the owner's memberships. */
  ownerId?: string;
  /** The address the credential states; only `emailVerified` exactly true counts for `email_domains`. */
  email?: string;
  emailVerified?: boolean;
}

export type RefusalReason =
  | 'unauthorized' // no credential
  | 'insufficient_user_authentication' // RFC 9470: assurance below the route's minimum
  | 'principal_not_allowed'
  | 'insufficient_scope' // RFC 6750 §3.1
  | 'dpop_required'
  | 'access_denied'; // signed in strongly enough, but no `allow` rule admits the principal

export type Decision =
  | { outcome: 'allow'; route: RoutePolicy | null; enforced: boolean; wouldRefuse?: RefusalReason }
  | {
      outcome: 'refuse';
      route: RoutePolicy | null;
      reason: RefusalReason;
      requiredAssurance?: AssuranceLevel;
      missingScopes?: string[];
      /** For `access_denied`: why the access rules refused. */
      access?: Extract<AccessDecision, { allowed: false }>;
    };

/** A stable bucket 0..99 for an id (first 32 bits of SHA-256), so a session stays in or out of the canary. */
export function canaryBucket(id: string): number {
  return createHash('sha256').update(`keyplane:canary:${id}`).digest().readUInt32BE(0) % 100;
}

/** What the route would refuse the caller for, ignoring the mode; null when it allows. */
export function checkRoute(
  route: RoutePolicy | null,
  caller: Caller | null,
  directory?: AccessDirectory,
): {
  reason: RefusalReason;
  requiredAssurance?: AssuranceLevel;
  missingScopes?: string[];
  access?: Extract<AccessDecision, { allowed: false }>;
} | null {
  if (route?.public === true) return null;
  // An unmatched path is protected: a caller is required, nothing more (fail closed).
  if (caller === null) return { reason: 'unauthorized' };
  if (!route) return null;
  if (route.principals && route.principals.length > 0 && !route.principals.includes(caller.principalType))
    return { reason: 'principal_not_allowed' };
  if (route.dpop === 'required' && caller.kind !== 'dpop') return { reason: 'dpop_required' };
  if (route.scopes && route.scopes.length > 0) {
    const missing = route.scopes.filter((scope) => !caller.scopes.includes(scope));
    if (missing.length > 0) return { reason: 'insufficient_scope', missingScopes: missing };
  }
  if (
    route.min_assurance &&
    !(isAssuranceLevel(caller.assurance) && meetsAssurance(caller.assurance, route.min_assurance))
  ) {
    return { reason: 'insufficient_user_authentication', requiredAssurance: route.min_assurance };
  }
  // Who, last: a caller refused here has signed in strongly enough, so a new sign-in cannot help (403, no redirect).
  if (route.allow) {
    const access = evaluateAccess(route.allow, principalFromDirectory(directory, caller));
    if (!access.allowed) return { reason: 'access_denied', access };
  }
  return null;
}

/** Whether a refusal is enforced for this caller under the policy's mode. */
export function isEnforced(policy: GatewayPolicy, caller: Caller | null): boolean {
  if (policy.mode === 'enforce') return true;
  if (policy.mode === 'observe') return false;
  // canary: a stable share of sessions; an anonymous caller has no id to place, so it is observed.
  if (caller === null) return false;
  return canaryBucket(caller.bucketId) < (policy.canary_percent ?? 0);
}

/**
 * Evaluates `path` for `caller`: allow (perhaps only because the refusal is observed) or refuse.
 * `directory` (from the signed config) holds the memberships the routes' `allow` rules need.
 */
export function evaluatePolicy(
  policy: GatewayPolicy,
  path: string,
  caller: Caller | null,
  directory?: AccessDirectory,
): Decision {
  const route = findRoute(policy.routes, path);
  const refusal = checkRoute(route, caller, directory);
  // `enforced` says whether this decision would have held against a refusal: evidence reports
  // the last enforced decision, and an observing gateway enforces nothing.
  if (!refusal) return { outcome: 'allow', route, enforced: isEnforced(policy, caller) };
  if (!isEnforced(policy, caller)) return { outcome: 'allow', route, enforced: false, wouldRefuse: refusal.reason };
  return { outcome: 'refuse', route, ...refusal };
}

/**
 * What a tool's rules refuse the caller for, after the route admitted it: too weak a sign-in
 * (RFC 9470) first, since a step-up can fix that, then the tool's `allow` rules (403).
 */
export function checkToolCall(
  rule: ToolRule,
  caller: Caller,
  directory?: AccessDirectory,
): {
  reason: 'insufficient_scope' | 'insufficient_user_authentication' | 'access_denied';
  missingScopes?: string[];
  requiredAssurance?: AssuranceLevel;
  access?: Extract<AccessDecision, { allowed: false }>;
} | null {
  const missing = (rule.scopes ?? []).filter((scope) => !caller.scopes.includes(scope));
  if (missing.length > 0) return { reason: 'insufficient_scope', missingScopes: missing };
  if (
    rule.min_assurance &&
    !(isAssuranceLevel(caller.assurance) && meetsAssurance(caller.assurance, rule.min_assurance))
  )
    return { reason: 'insufficient_user_authentication', requiredAssurance: rule.min_assurance };
  if (rule.allow) {
    const access = evaluateAccess(rule.allow, principalFromDirectory(directory, caller));
    if (!access.allowed) return { reason: 'access_denied', access };
  }
  return null;
}
