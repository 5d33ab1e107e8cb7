import { randomInt } from 'node:crypto';

/**
 * The device authorization grant (RFC 8628): user codes and the answer to one poll of the token
 * endpoint. Pure but for the CSPRNG: the caller stores the pending authorizations.
 */

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** How long a device code and its user code live (RFC 8628 §3.2 `expires_in`). */
export const DEVICE_CODE_LIFETIME_SECONDS = 600;
/** The least time between two polls (RFC 8628 §3.2 `interval`). */
export const DEVICE_POLL_INTERVAL_SECONDS = 5;
/**
 * RFC 8628 §6.1: twenty consonants, upper case only: no vowels (no words), none of the letters
 * that look like digits or each other, so a code read from a TV is typed right the first time.
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
/** 8 characters of 20: 20^8 ≈ 2^34.6 codes, against a guessing budget throttled per address and account. */
const USER_CODE_LENGTH = 8;

/** A fresh user code as people see it: `XXXX-XXXX`. */
export function generateUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return formatUserCode(code);
}

/** `BCDFGHJK` → `BCDF-GHJK`. */
export function formatUserCode(normalized: string): string {
  return `${normalized.slice(0, 4)}-${normalized.slice(4)}`;
}

/**
 * What a person typed, as the stored form: case, spaces and dashes do not matter (RFC 8628
 * §6.1); anything else that is not a code is null, so it never reaches the store.
 */
export function normalizeUserCode(input: unknown): string | null {
  if (typeof input !== 'string' || input.length > 32) return null;
  const code = input.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== USER_CODE_LENGTH) return null;
  for (const char of code) if (!USER_CODE_ALPHABET.includes(char)) return null;
  return code;
}

/** A pending device authorization as the server keeps it. */
export interface DeviceAuthorization {
  clientId: string;
  scopes: string[];
  resource: string | null;
  /** The normalized user code. */
  userCode: string;
  /** ms */
  expiresAt: number;
  status: 'pending' | 'approved' | 'denied';
  /** The sign-in that approved it (only when approved). */
  approvedBy?: { identityId: string; sessionId: string; assurance: string; amr: string[]; authTime: number };
}

/** RFC 8628 §3.5: the answer to one poll. `issue` means tokens now (and the authorization is spent). */
export type DevicePollAnswer =
  'issue' | 'authorization_pending' | 'slow_down' | 'access_denied' | 'expired_token' | 'invalid_grant';

/**
 * Decides one poll: for another client or an unknown code `invalid_grant`; past its life
 * `expired_token`; a poll sooner than the interval after the last one `slow_down`; then by the
 * person's decision.
 */
export function decideDevicePoll(input: {
  authorization: DeviceAuthorization | null;
  clientId: string;
  now: number;
  /** False when the previous poll was less than the interval ago. */
  pollAllowed: boolean;
}): DevicePollAnswer {
  const { authorization } = input;
  if (!authorization || authorization.clientId !== input.clientId) return 'invalid_grant';
  if (input.now >= authorization.expiresAt) return 'expired_token';
  if (!input.pollAllowed) return 'slow_down';
  if (authorization.status === 'denied') return 'access_denied';
  if (authorization.status === 'approved') return 'issue';
  return 'authorization_pending';
}
