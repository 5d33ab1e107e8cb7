import { fail } from '../errors/keyplane-error.js';

/**
 * The FedCM identity provider's documents and request rules (W3C FedCM, as Chromium ships it;
 * docs/in-place.md#fedcm). Pure: the routes pass the issuer and what storage holds.
 */

export const FEDCM_PATHS = {
  config: '/fedcm/config.json',
  accounts: '/fedcm/accounts',
  clientMetadata: '/fedcm/client-metadata',
  assertion: '/fedcm/assertion',
  disconnect: '/fedcm/disconnect',
  /** Where the browser sends a person who is not signed in (FedCM "login_url"). */
  login: '/auth',
} as const;

/** FedCM §7.1 well-known file, with `accounts_endpoint` and `login_url` (needed beside a `client_metadata_endpoint`). */
export function buildWebIdentity(issuer: string): {
  provider_urls: string[];
  accounts_endpoint: string;
  login_url: string;
} {
  return {
    provider_urls: [`${issuer}${FEDCM_PATHS.config}`],
    accounts_endpoint: `${issuer}${FEDCM_PATHS.accounts}`,
    login_url: `${issuer}${FEDCM_PATHS.login}`,
  };
}

/** FedCM §7.2 provider configuration. */
export function buildProviderConfig(issuer: string, name: string): Record<string, unknown> {
  return {
    accounts_endpoint: `${issuer}${FEDCM_PATHS.accounts}`,
    client_metadata_endpoint: `${issuer}${FEDCM_PATHS.clientMetadata}`,
    id_assertion_endpoint: `${issuer}${FEDCM_PATHS.assertion}`,
    disconnect_endpoint: `${issuer}${FEDCM_PATHS.disconnect}`,
    login_url: `${issuer}${FEDCM_PATHS.login}`,
    branding: { background_color: '#1f3a5f', color: '#ffffff', name },
  };
}

/**
 * Only the browser's FedCM machinery sends `Sec-Fetch-Dest: webidentity` (a forbidden header
 * name, so page script cannot forge it): without it a request to the accounts or assertion
 * endpoint is someone else's fetch or navigation and is refused (CSRF).
 */
export function isWebIdentityRequest(secFetchDest: string | string[] | undefined): boolean {
  return secFetchDest === 'webidentity';
}

export interface AssertionRequest {
  clientId: string;
  accountId: string;
  nonce: string;
  /** The browser showed its disclosure text (the person saw what is shared with the client). */
  disclosureShown: boolean;
}

const MAX_NONCE = 512;

function field(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > 4096)
    throw fail('invalid_request', `${name} must be one non-empty string`);
  return value;
}

/**
 * Reads the ID assertion request (FedCM §7.5: `client_id`, `account_id`, `params`, and the
 * disclosure fields). The nonce travels inside `params` (JSON) as the FedCM IDL now says;
 * a top-level `nonce` is read too, for browsers that still send it. Both present must agree.
 */
export function readAssertionRequest(body: Record<string, unknown>): AssertionRequest {
  const clientId = field(body, 'client_id');
  const accountId = field(body, 'account_id');
  if (!clientId || !accountId) throw fail('invalid_request', 'client_id and account_id are required');
  let fromParams: string | undefined;
  const params = field(body, 'params');
  if (params !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(params);
    } catch {
      throw fail('invalid_request', 'params must be JSON');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw fail('invalid_request', 'params must be a JSON object');
    const value = (parsed as Record<string, unknown>).nonce;
    if (value !== undefined && typeof value !== 'string')
      throw fail('invalid_request', 'params.nonce must be a string');
    fromParams = value;
  }
  const topLevel = field(body, 'nonce');
  if (fromParams !== undefined && topLevel !== undefined && fromParams !== topLevel)
    throw fail('invalid_request', 'params.nonce and nonce differ');
  const nonce = fromParams ?? topLevel;
  if (nonce === undefined || nonce.length === 0 || nonce.length > MAX_NONCE)
    throw fail('invalid_request', `a nonce of 1 to ${MAX_NONCE} characters is required (params.nonce)`);
  const shownFor = typeof body.disclosure_shown_for === 'string' ? body.disclosure_shown_for : '';
  return { clientId, accountId, nonce, disclosureShown: body.disclosure_text_shown === 'true' || shownFor.length > 0 };
}

export interface FedcmAccount {
  id: string;
  name: string;
  username: string;
  email?: string;
  approved_clients: string[];
  login_hints: string[];
}

/**
 * One FedCM account (§7.3) for the signed-in identity. `approved_clients` lists the clients the
 * account approved, so that the browser skips its disclosure for them.
 */
export function buildAccount(
  identity: { identityId: string; username: string; displayName: string },
  facts: { email?: string; approvedClients: readonly string[] },
): FedcmAccount {
  return {
    id: identity.identityId,
    name: identity.displayName || identity.username,
    username: identity.username,
    ...(facts.email !== undefined ? { email: facts.email } : {}),
    approved_clients: [...facts.approvedClients],
    login_hints: [identity.username],
  };
}

/** FedCM §7.5 error codes, by the envelope's reason. */
const ERROR_CODES: Record<string, string> = {
  origin_mismatch: 'unauthorized_client',
  in_place_disabled: 'unauthorized_client',
  not_found: 'unauthorized_client',
  unauthorized: 'access_denied',
  account_mismatch: 'access_denied',
  consent_required: 'access_denied',
  account_disabled: 'access_denied',
  account_suspended: 'access_denied',
  access_denied: 'access_denied',
  rate_limited: 'temporarily_unavailable',
  internal: 'server_error',
  not_ready: 'temporarily_unavailable',
  unavailable: 'temporarily_unavailable',
};

/**
 * The FedCM error member for an envelope: `{code, error}` with the same value, since Chromium
 * reads either key (protocols research §2.4).
 */
export function buildFedcmError(reason: string): { code: string; error: string } {
  const code = ERROR_CODES[reason] ?? 'invalid_request';
  return { code, error: code };
}
