import { checkAllowRules, type AllowRules } from '../access/evaluate-access.js';
import { isAssuranceLevel } from '../assurance/assurance.js';
import type { GatewayPolicy, RoutePolicy, ToolRule } from './policy.js';

/**
 * Where a policy is read. `registration` (the control plane, from a client's metadata) applies every
 * rule: the document's shape and the authoring rules (limits, reserved and repeated paths, canary
 * needs a percentage, a public route demands nothing, tool rules need an MCP route, `resource` is
 * the control plane's to set). `enforcement` (the gateway, from the signed config) applies the
 * shape only: the authoring rules held when the policy was registered, and a rule changed since must
 * not make every gateway refuse a config it enforced yesterday. Neither ignores an unknown key or a
 * malformed value: a gateway never enforces less than the signed policy says (it fails closed).
 */
export type PolicyReader = 'registration' | 'enforcement';

export interface ParsePolicyOptions {
  at: PolicyReader;
  /** Registration: the scope tokens of a route's `scopes`, normalized as the client's own scopes. */
  scopeTokens?: (value: string) => string[];
}

export const POLICY_LIMITS = { routes: 200, acceptClients: 50, allowEntries: 500, text: 200, path: 500 };

const MODES = ['observe', 'canary', 'enforce'] as const;
const ROUTE_KEYS = [
  'path',
  'min_assurance',
  'principals',
  'scopes',
  'dpop',
  'public',
  'allow',
  'mcp',
  'tools',
  'forward_token',
];
/** Set by the control plane in the signed config (docs/gateway.md#policy), never by a registration. */
const ISSUED_ROUTE_KEYS = ['resource'];
const ASSURANCE_TEXT = 'recovery, email, passkey, sensitive';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function allowEntries(allow: unknown): number {
  return isObject(allow)
    ? Object.values(allow).reduce<number>((n, list) => n + (Array.isArray(list) ? list.length : 0), 0)
    : 0;
}

/** A route's `tools` (each tool: `scopes?`, `min_assurance?`, `allow?`): the rules, and every problem with its path. */
function parseToolRules(value: unknown, where: string, problems: string[]): Record<string, ToolRule> | undefined {
  if (!isObject(value)) {
    problems.push(`${where} must be an object`);
    return undefined;
  }
  const tools: Record<string, ToolRule> = {};
  for (const [name, rule] of Object.entries(value)) {
    const at = `${where}.${name}`;
    if (name.length === 0 || name.length > 128) problems.push(`${where} has a tool name that is empty or too long`);
    if (!isObject(rule)) {
      problems.push(`${at} must be an object`);
      continue;
    }
    for (const key of Object.keys(rule))
      if (key !== 'min_assurance' && key !== 'allow' && key !== 'scopes')
        problems.push(`${at}.${key} is not a known key`);
    // A tool's scopes are scopes of the route's resource (docs/apis.md#gateways-declare-their-scopes).
    if (
      rule['scopes'] !== undefined &&
      !(
        Array.isArray(rule['scopes']) &&
        rule['scopes'].every((s) => typeof s === 'string' && /^[\x21\x23-\x5b\x5d-\x7e]{1,100}$/.test(s))
      )
    )
      problems.push(`${at}.scopes must be a list of scope names`);
    if (rule['min_assurance'] !== undefined && !isAssuranceLevel(rule['min_assurance']))
      problems.push(`${at}.min_assurance must be one of: ${ASSURANCE_TEXT}`);
    if (rule['allow'] !== undefined) problems.push(...checkAllowRules(rule['allow'], `${at}.allow`));
    tools[name] = rule as ToolRule;
  }
  return tools;
}

function parseRoute(
  raw: unknown,
  at: string,
  options: ParsePolicyOptions,
  problems: string[],
  seen: Set<string>,
): RoutePolicy | null {
  if (!isObject(raw)) {
    problems.push(`${at} must be an object`);
    return null;
  }
  const registration = options.at === 'registration';
  const known = registration ? ROUTE_KEYS : [...ROUTE_KEYS, ...ISSUED_ROUTE_KEYS];
  for (const key of Object.keys(raw)) if (!known.includes(key)) problems.push(`${at}.${key} is not a known key`);
  const { path } = raw;
  if (typeof path !== 'string' || !path.startsWith('/')) problems.push(`${at}.path must be a path starting with /`);
  else if (registration) {
    if (path.length > POLICY_LIMITS.path || /[?#\s]/.test(path))
      problems.push(`${at}.path must be an absolute path without query or fragment`);
    if (path === '/_gate' || path.startsWith('/_gate/'))
      problems.push(`${at}.path must not be under the reserved /_gate/`);
    if (seen.has(path)) problems.push(`${at}.path repeats another route`);
    seen.add(path);
  }
  const route = { ...raw } as unknown as RoutePolicy;
  if (raw['resource'] !== undefined && !(typeof raw['resource'] === 'string' && /^https?:\/\//.test(raw['resource'])))
    problems.push(`${at}.resource must be an absolute URL`);
  if (raw['min_assurance'] !== undefined && !isAssuranceLevel(raw['min_assurance']))
    problems.push(`${at}.min_assurance must be one of: ${ASSURANCE_TEXT}`);
  const principals = raw['principals'];
  if (principals !== undefined) {
    if (!Array.isArray(principals) || principals.length === 0 || principals.some((p) => p !== 'human' && p !== 'agent'))
      problems.push(`${at}.principals must list human and/or agent`);
    else route.principals = [...new Set(principals)] as RoutePolicy['principals'];
  }
  const scopes = raw['scopes'];
  if (scopes !== undefined) {
    if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string' || s.length === 0 || s.includes(' ')))
      problems.push(`${at}.scopes must be a list of scope names`);
    else if (options.scopeTokens) route.scopes = options.scopeTokens(scopes.join(' '));
  }
  if (raw['dpop'] !== undefined && raw['dpop'] !== 'required' && raw['dpop'] !== 'allowed')
    problems.push(`${at}.dpop must be one of: required, allowed`);
  if (raw['allow'] !== undefined) {
    problems.push(...checkAllowRules(raw['allow'], `${at}.allow`));
    if (registration && allowEntries(raw['allow']) > POLICY_LIMITS.allowEntries)
      problems.push(`${at}.allow has more than ${POLICY_LIMITS.allowEntries} entries`);
    route.allow = raw['allow'] as AllowRules;
  }
  if (raw['mcp'] !== undefined && typeof raw['mcp'] !== 'boolean') problems.push(`${at}.mcp must be a boolean`);
  if (raw['mcp'] === false) delete route.mcp;
  if (raw['tools'] !== undefined) {
    // docs/gateway.md#mcp-routes: rules per tool only mean something where tool calls are read.
    if (registration && raw['mcp'] !== true) problems.push(`${at}.tools needs mcp: true`);
    const tools = parseToolRules(raw['tools'], `${at}.tools`, problems);
    if (registration && tools && Object.keys(tools).length > POLICY_LIMITS.routes)
      problems.push(`${at}.tools has more than ${POLICY_LIMITS.routes} tools`);
  }
  if (raw['forward_token'] !== undefined) {
    if (typeof raw['forward_token'] !== 'boolean') problems.push(`${at}.forward_token must be a boolean`);
    else if (registration && raw['mcp'] !== true) problems.push(`${at}.forward_token needs mcp: true`);
    if (raw['forward_token'] === false) delete route.forward_token;
  }
  if (raw['public'] !== undefined) {
    if (typeof raw['public'] !== 'boolean') problems.push(`${at}.public must be a boolean`);
    else if (registration) {
      if (raw['public'] !== true) problems.push(`${at}.public must be true when present`);
      const demands =
        raw['min_assurance'] || raw['principals'] || raw['scopes'] || raw['dpop'] === 'required' || raw['allow'];
      if (demands || raw['mcp'] === true)
        problems.push(
          `${at} is public and cannot also demand assurance, principals, scopes, DPoP or allow rules, or be an MCP route`,
        );
    }
  }
  return route;
}

/**
 * The one reader of a gateway policy (docs/gateway.md#policy): the control plane's registration and
 * the gateway's signed config both read it here, `at` saying which rules apply. Every problem is
 * named with its path (`gateway.routes[2].min_assurance must be one of: …`); the policy is returned
 * only when there are none.
 */
export function parseGatewayPolicy(
  value: unknown,
  options: ParsePolicyOptions,
): { policy: GatewayPolicy; problems: [] } | { policy: null; problems: string[] } {
  if (!isObject(value)) return { policy: null, problems: ['gateway must be an object'] };
  const registration = options.at === 'registration';
  const problems: string[] = [];
  const mode = value['mode'];
  if (!(MODES as readonly unknown[]).includes(mode)) problems.push(`gateway.mode must be one of: ${MODES.join(', ')}`);
  const policy = { mode, routes: [] } as unknown as GatewayPolicy;
  const percent = value['canary_percent'];
  if (percent !== undefined) {
    if (!(typeof percent === 'number' && Number.isInteger(percent) && percent >= 0 && percent <= 100))
      problems.push('gateway.canary_percent must be an integer 0..100');
    policy.canary_percent = percent as number;
  } else if (registration && mode === 'canary') problems.push('gateway.canary_percent is required in canary mode');
  const accept = value['accept_clients'];
  if (accept !== undefined) {
    const ids = Array.isArray(accept) ? accept : [null];
    if (ids.some((id) => typeof id !== 'string' || id.length === 0 || id.length > POLICY_LIMITS.text))
      problems.push('gateway.accept_clients must be a list of client ids');
    else if (registration && ids.length > POLICY_LIMITS.acceptClients)
      problems.push(`gateway.accept_clients has more than ${POLICY_LIMITS.acceptClients} entries`);
    else if (ids.length > 0) policy.accept_clients = [...new Set(ids as string[])];
  }
  const routes = value['routes'];
  if (!Array.isArray(routes)) problems.push('gateway.routes must be an array');
  else {
    if (registration && routes.length > POLICY_LIMITS.routes)
      problems.push(`gateway.routes has more than ${POLICY_LIMITS.routes} entries`);
    const seen = new Set<string>();
    routes.forEach((raw, index) => {
      const route = parseRoute(raw, `gateway.routes[${index}]`, options, problems, seen);
      if (route) policy.routes.push(route);
    });
  }
  return problems.length > 0 ? { policy: null, problems } : { policy, problems: [] };
}
