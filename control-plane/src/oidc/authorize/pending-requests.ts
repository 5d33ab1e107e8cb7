import { fail } from '#lib/errors/keyplane-error.js';
import { randomToken } from '#lib/crypto/random.js';
import type { AuthorizeServices } from './request.js';

/** A request waiting for sign-in or step-up lives this long (ms). */
const PENDING_TTL_MS = 15 * 60_000;

/** A request parked while the person signs in, steps up or chooses an account. */
export interface PendingRequest {
  /** The resolved parameters (request objects were verified before the request was parked). */
  params: Record<string, string>;
  /** When the request first sent the person to sign in: a sign-in at or after it honours prompt=login and max_age. */
  loginAfter?: number;
  /** The person chose the signed-in account on the account-choice page (prompt=select_account). */
  accountChosen?: boolean;
}

/** Parks a request in shared state (every replica can resume it); returns its id for `?resume=`. */
export async function parkRequest(
  services: Pick<AuthorizeServices, 'state'>,
  pending: PendingRequest,
): Promise<string> {
  const id = randomToken(24);
  await services.state.set(`oidc:pending:${id}`, JSON.stringify(pending), PENDING_TTL_MS);
  return id;
}

/** The parked request `resume` names, or the refusal a page shows when it expired. */
export async function resumeRequest(
  services: Pick<AuthorizeServices, 'state'>,
  resume: string,
): Promise<PendingRequest> {
  const stored = /^[A-Za-z0-9_-]{32}$/.test(resume) ? await services.state.get(`oidc:pending:${resume}`) : null;
  if (!stored) throw fail('invalid_request', 'This sign-in request has expired. Go back to the app and start again.');
  return JSON.parse(stored) as PendingRequest;
}
