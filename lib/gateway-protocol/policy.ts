import { createHash } from 'node:crypto';
import { principalFromDirectory, type AccessDirectory } from '../access/directory.js';
import { checkAllowRules, evaluateAccess, type AccessDecision, type AllowRules } from '../access/evaluate-access.js';
import { isAssuranceLevel, meetsAssurance, type AssuranceLevel } from '../assurance/assurance.js';
import { findRoute } from './request-path.js';

export { findRoute, pathSegments } from './request-path.js';

/**
 * Per-route policy of the edge-gate (docs/gateway.md#policy): the `gateway` member of the
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
}

/** What one MCP tool demands (docs/gateway.md#mcp-routes). */
export interface ToolRule {
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

/** Problems in a policy document, each with its path; empty when it is valid. */
export function checkGatewayPolicy(value: unknown): string[] {
  const problems: string[] = [];
  if (!value || typeof value !== 'object' || Array.isArray(value)) return ['gateway must be an object'];
  const policy = value as Record<string, unknown>;
  if (!['observe', 'canary', 'enforce'].includes(policy['mode'] as string))
    problems.push('gateway.mode must be one of: observe, canary, enforce');
  const percent = policy['canary_percent'];
  if (percent !== undefined && !(Number.isInteger(percent) && (percent as number) >= 0 && (percent as number) <= 100))
    problems.push('gateway.canary_percent must be an integer 0..100');
  const accept = policy['accept_clients'];
  if (accept !== undefined && !(Array.isArray(accept) && accept.every((id) => typeof id === 'string' && id.length > 0)))
    problems.push('gateway.accept_clients must be a list of client ids');
  if (!Array.isArray(policy['routes'])) return [...problems, 'gateway.routes must be an array'];
  (policy['routes'] as unknown[]).forEach((entry, index) => {
    const where = `gateway.routes[${index}]`;
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) {
      problems.push(`${where} must be an object`);
      return;
    }
    const route = entry as Record<string, unknown>;
    const known = [
      'path',
      'min_assurance',
      'principals',
      'scopes',
      'dpop',
      'public',
      'resource',
      'allow',
      'mcp',
      'tools',
    ];
    for (const key of Object.keys(route)) if (!known.includes(key)) problems.push(`${where}.${key} is not a known key`);
    if (
      route['resource'] !== undefined &&
      !(typeof route['resource'] === 'string' && /^https?:\/\//.test(route['resource']))
    )
      problems.push(`${where}.resource must be an absolute URL`);
    if (typeof route['path'] !== 'string' || !route['path'].startsWith('/'))
      problems.push(`${where}.path must be a path starting with /`);
    if (route['min_assurance'] !== undefined && !isAssuranceLevel(route['min_assurance']))
      problems.push(`${where}.min_assurance must be one of: recovery, email, passkey, sensitive`);
    if (
      route['principals'] !== undefined &&
      !(Array.isArray(route['principals']) && route['principals'].every((p) => p === 'human' || p === 'agent'))
    )
      problems.push(`${where}.principals must list human and/or agent`);
    if (
      route['scopes'] !== undefined &&
      !(Array.isArray(route['scopes']) && route['scopes'].every((s) => typeof s === 'string' && s.length > 0))
    )
      problems.push(`${where}.scopes must be a list of scope names`);
    if (route['dpop'] !== undefined && route['dpop'] !== 'required' && route['dpop'] !== 'allowed')
      problems.push(`${where}.dpop must be one of: required, allowed`);
    if (route['public'] !== undefined && typeof route['public'] !== 'boolean')
      problems.push(`${where}.public must be a boolean`);
    if (route['allow'] !== undefined) problems.push(...checkAllowRules(route['allow'], `${where}.allow`));
    if (route['mcp'] !== undefined && typeof route['mcp'] !== 'boolean')
      problems.push(`${where}.mcp must be a boolean`);
    if (route['tools'] !== undefined) problems.push(...checkToolRules(route['tools'], `${where}.tools`));
  });
  return problems;
}

/** Problems in a route's `tools` (each tool: `min_assurance?`, `allow?`), each with its path. */
export function checkToolRules(value: unknown, where: string): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return [`${where} must be an object`];
  const problems: string[] = [];
  for (const [name, rule] of Object.entries(value as Record<string, unknown>)) {
    const at = `${where}.${name}`;
    if (name.length === 0 || name.length > 128) problems.push(`${where} has a tool name that is empty or too long`);
    if (!rule || typeof rule !== 'object' || Array.isArray(rule)) {
      problems.push(`${at} must be an object`);
      continue;
    }
    const fields = rule as Record<string, unknown>;
    for (const key of Object.keys(fields))
      if (key !== 'min_assurance' && key !== 'allow') problems.push(`${at}.${key} is not a known key`);
    if (fields['min_assurance'] !== undefined && !isAssuranceLevel(fields['min_assurance']))
      problems.push(`${at}.min_assurance must be one of: recovery, email, passkey, sensitive`);
    if (fields['allow'] !== undefined) problems.push(...checkAllowRules(fields['allow'], `${at}.allow`));
  }
  return problems;
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
  reason: 'insufficient_user_authentication' | 'access_denied';
  requiredAssurance?: AssuranceLevel;
  access?: Extract<AccessDecision, { allowed: false }>;
} | null {
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
