import type { AuthorizationRequest, ErrorTarget, RawParams } from '#lib/oauth/authorization-request.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices, SessionView } from '../../context.js';
import type { StoredClient } from '../../storage/interface.js';
import type { AccountChoiceView, NotAdmittedView, OneTapView } from './views.js';

/** What the authorization endpoint's steps run on. */
export type AuthorizeServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'events' | 'keys' | 'now' | 'fetcher' | 'secrets'
>;

/** What the operation needs of the browser: its session, and the language its pages take from `ui_locales`. */
export interface AuthorizeBrowser {
  session: SessionView | undefined;
  adoptUiLocales(uiLocales: unknown): void;
}

/** What the route sends: every answer of the authorization endpoint but a refusal shown on a page (thrown). */
export type AuthorizeOutcome =
  /** A code or an error for the client, at its verified redirect URI by the requested response mode. */
  | { kind: 'respond'; target: ErrorTarget; params: Record<string, string>; refused?: string }
  /** The sign-in or step-up page, which resumes the parked request. */
  | { kind: 'redirect'; location: string }
  | { kind: 'account_choice'; view: AccountChoiceView }
  | { kind: 'one_tap'; view: OneTapView }
  | { kind: 'not_admitted'; view: NotAdmittedView };

/** A request checked against its client's registration, its redirect URI verified. */
export interface CheckedRequest {
  client: StoredClient;
  authz: AuthorizationRequest;
  target: ErrorTarget;
  /** An MCP route's resource (docs/gateway.md#mcp-routes): the person always sees who asks for it. */
  mcpResource: boolean;
}

/**
 * Where a refusal may go: null until a redirect URI that the client registered is known, then that
 * URI. Steps set it as they verify; the operation answers every refusal by it, in one place.
 */
export interface RefusalTarget {
  target: ErrorTarget | null;
}

/** Parameters carried through the pending request and the one-tap form. */
const CARRIED = [
  'client_id',
  'redirect_uri',
  'response_type',
  'response_mode',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  'prompt',
  'max_age',
  'acr_values',
  'dpop_jkt',
  'resource',
  'id_token_hint',
  // The upstream connection to sign in through (docs/federation.md#asking-for-a-connection).
  'connection',
];

/** The parameters worth keeping (single strings only; a repeated one is dropped, so the check refuses it). */
export function carried(params: RawParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of CARRIED) {
    const value = params[name];
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

/** What an approval token is bound to: exactly these carried parameters. */
export function digestOf(params: Record<string, string>): string {
  return sha256Hex(JSON.stringify(CARRIED.map((name) => params[name] ?? null)));
}

export function targetOf(authz: AuthorizationRequest): ErrorTarget {
  return {
    redirectUri: authz.redirectUri,
    responseMode: authz.responseMode,
    ...(authz.state !== undefined ? { state: authz.state } : {}),
  };
}

/**
 * Where the approval form's answer goes, for CSP form-action and the page: the redirect URI's
 * origin, or for a native app's private-use scheme (RFC 8252 §7.1, origin "null") its scheme.
 */
export function formTargetOf(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.origin === 'null' ? url.protocol : url.origin;
}
