import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';

/** RFC 6238 parameters every authenticator app understands: SHA-1, 6 digits, 30-second steps. */
export const TOTP_DIGITS = 6;
export const TOTP_PERIOD_SECONDS = 30;
export const TOTP_ALGORITHM = 'SHA1';
/** Steps accepted either side of the current one (clock drift between phone and server). */
export const TOTP_WINDOW = 1;

export interface TotpSecret {
  /** RFC 4648 base32, no padding: what the person types into an app that cannot scan. */
  base32: string;
}

/** A fresh 160-bit secret (RFC 4226 §4 recommends 160 bits for HMAC-SHA-1). */
export function generateTotpSecret(): TotpSecret {
  return { base32: new Secret({ size: 20 }).base32 };
}

function totpFor(secretBase32: string, label = 'account', issuer = 'Keyplane'): TOTP {
  return new TOTP({
    issuer,
    label,
    algorithm: TOTP_ALGORITHM,
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_SECONDS,
    secret: Secret.fromBase32(secretBase32),
  });
}

/** The `otpauth://totp/…` URI (Key Uri Format) an authenticator app imports. */
export function buildTotpUri(secretBase32: string, options: { issuer: string; accountName: string }): string {
  return totpFor(secretBase32, options.accountName, options.issuer).toString();
}

/** The URI as an SVG QR code (a self-contained string, no script, safe to inline in a page). */
export async function renderTotpQrSvg(uri: string): Promise<string> {
  return QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
}

/** The time step (RFC 6238 `T`) that `now` falls in. */
export function totpStepAt(now: number): number {
  return Math.floor(now / 1000 / TOTP_PERIOD_SECONDS);
}

/** The code for `now`; tests and the docs' examples use it, the server never needs to. */
export function generateTotpCode(secretBase32: string, now: number): string {
  return totpFor(secretBase32).generate({ timestamp: now });
}

export type TotpVerification = { ok: true; step: number } | { ok: false; why: 'malformed' | 'wrong' | 'replayed' };

/**
 * Checks a 6-digit code against the steps `now - 1 … now + 1`. A step is accepted at most once:
 * `lastUsedStep` is the step of the last accepted code, and only a later step passes (RFC 6238
 * §5.2: the verifier must not accept the second attempt of the same OTP). The caller stores the
 * returned `step` as the new `lastUsedStep` in the same write that acts on the code.
 */
export function verifyTotpCode(
  code: string,
  options: { secretBase32: string; now: number; lastUsedStep: number | null; window?: number },
): TotpVerification {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return { ok: false, why: 'malformed' };
  const totp = totpFor(options.secretBase32);
  const delta = totp.validate({ token, timestamp: options.now, window: options.window ?? TOTP_WINDOW });
  if (delta === null) return { ok: false, why: 'wrong' };
  const step = totpStepAt(options.now) + delta;
  if (options.lastUsedStep !== null && step <= options.lastUsedStep) return { ok: false, why: 'replayed' };
  return { ok: true, step };
}
