import { DEVICE_CODE_GRANT } from './device-code.js';
import { TOKEN_EXCHANGE_GRANT } from './token-exchange.js';

/**
 * The grant types this provider offers, each declared once with what registration and the token
 * endpoint need to know of it. The token endpoint's dispatch (control-plane/src/oidc/grants/registry.ts),
 * discovery's `grant_types_supported`, the registration validator and its cap all read this list, so
 * a new grant is one declaration here and its module (docs/architecture.md#adding-a-grant).
 */

/** RFC 7523 §2.1, for agents (docs/agents.md#tokens). */
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

export interface GrantDeclaration {
  /**
   * What lets a client use it: its registered `grant_types`, or `access.agents` (an agent's grant
   * is admitted by the client's access declaration; listing the grant type says the same and is
   * accepted only together with `access.agents: true`).
   */
  readonly admittedBy: 'grant_types' | 'access.agents';
  /**
   * A client may register it without `authorization_code`, and then needs no redirect URI (a CLI
   * or a TV signing people in through the device grant, a service that only exchanges tokens).
   */
  readonly standsAlone: boolean;
}

export const GRANT_DECLARATIONS = {
  authorization_code: { admittedBy: 'grant_types', standsAlone: true },
  refresh_token: { admittedBy: 'grant_types', standsAlone: false },
  [JWT_BEARER_GRANT]: { admittedBy: 'access.agents', standsAlone: false },
  [DEVICE_CODE_GRANT]: { admittedBy: 'grant_types', standsAlone: true },
  [TOKEN_EXCHANGE_GRANT]: { admittedBy: 'grant_types', standsAlone: true },
  // RFC 6749 §4.4: a confidential client acting for itself (docs/apis.md#client-credentials).
  client_credentials: { admittedBy: 'grant_types', standsAlone: true },
} as const satisfies Record<string, GrantDeclaration>;

export type GrantType = keyof typeof GRANT_DECLARATIONS;

/** Every grant type, in declaration order: discovery lists these and registration accepts these. */
export const GRANT_TYPES = Object.keys(GRANT_DECLARATIONS) as GrantType[];

export function isGrantType(value: string): value is GrantType {
  return Object.hasOwn(GRANT_DECLARATIONS, value);
}

/** The grant types a client may register alone (without `authorization_code`). */
export const STANDALONE_GRANT_TYPES = GRANT_TYPES.filter((type) => GRANT_DECLARATIONS[type].standsAlone);

/** Whether `client` may use grant `type` at the token endpoint. */
export function admitsGrant(
  client: { grant_types: readonly string[]; access: { agents: boolean } },
  type: GrantType,
): boolean {
  return GRANT_DECLARATIONS[type].admittedBy === 'access.agents'
    ? client.access.agents
    : client.grant_types.includes(type);
}
