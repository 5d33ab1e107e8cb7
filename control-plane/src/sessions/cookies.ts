import type { ControlPlaneServices } from '../context.js';
import { sha256 } from '#lib/crypto/sha256.js';

/**
 * Cookie names and attributes (docs/accounts.md#sessions-and-devices): `__Host-` names on https issuers,
 * plain names on http://localhost, where browsers refuse Secure cookies.
 */
/** What the cookie helpers read: the issuer's scheme and the lifetimes. */
export type CookieServices = Pick<ControlPlaneServices, 'config'>;

export function isHttpsIssuer(kp: CookieServices): boolean {
  return kp.config.issuer.startsWith('https://');
}

export function sessionCookieName(kp: CookieServices): string {
  return isHttpsIssuer(kp) ? '__Host-kp_session' : 'kp_session';
}

export function deviceCookieName(kp: CookieServices): string {
  return isHttpsIssuer(kp) ? '__Host-kp_device' : 'kp_device';
}

/**
 * The session's second cookie for FedCM (docs/in-place.md#cookies): Chromium's FedCM fetches of
 * the accounts and assertion endpoints carry only `SameSite=None` cookies, while the session
 * cookie stays `Lax`. This one holds the same value but is scoped to `Path=/fedcm/`, so it reaches
 * nothing but the FedCM endpoints, which each demand `Sec-Fetch-Dest: webidentity` or a
 * registered Origin. `SameSite=None` needs `Secure`, which Chromium honours on http://localhost too;
 * `__Host-` needs `Path=/`, hence `__Secure-`.
 */
export const FEDCM_COOKIE_PATH = '/fedcm/';

export function fedcmCookieName(kp: CookieServices): string {
  return isHttpsIssuer(kp) ? '__Secure-kp_fedcm' : 'kp_fedcm';
}

export function fedcmCookieOptions(maxAgeSeconds: number) {
  return { httpOnly: true, sameSite: 'none' as const, secure: true, path: FEDCM_COOKIE_PATH, maxAge: maxAgeSeconds };
}

/** 400 days: the longest lifetime browsers keep a cookie. */
export const DEVICE_COOKIE_MAX_AGE = 400 * 24 * 3600;

export function cookieOptions(kp: CookieServices, maxAgeSeconds: number) {
  return { httpOnly: true, sameSite: 'lax' as const, secure: isHttpsIssuer(kp), path: '/', maxAge: maxAgeSeconds };
}

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** A cookie value that looks like one of ours (256 random bits, base64url). */
export function wellFormedToken(value: string | undefined): value is string {
  return typeof value === 'string' && TOKEN.test(value);
}

/**
 * The device id is derived from the device cookie, so the ledger never stores the cookie value
 * and a device id shown on the account page cannot be turned back into the cookie.
 */
export function deviceIdFromToken(token: string): string {
  return `dev_${sha256(`keyplane:device:v1:${token}`).subarray(0, 16).toString('base64url')}`;
}
