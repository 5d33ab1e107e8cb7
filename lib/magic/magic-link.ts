import { validateReturnUrl } from '../http/return-url.js';
import { randomToken } from '../crypto/random.js';
import { sha256Hex } from '../crypto/sha256.js';

/**
 * One-time links sent by mail: magic sign-in links, email-verification links and passkey
 * enrolment links share one shape. The token carries 256 random bits and appears only in the mailed URL; what is stored
 * is its SHA-256, so a copy of the store cannot be turned back into working links.
 */
export type LinkPurpose = 'signin' | 'verify_email' | 'enrol_passkey';

export interface LinkRecord {
  tokenHash: string;
  purpose: LinkPurpose;
  identityId: string;
  /** The email row the link was sent to (never the address itself). */
  emailId: string;
  /** The device that asked for a sign-in link; the link works only there. Null for verification links. */
  deviceId: string | null;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
}

export interface IssuedLink {
  /** The secret that goes into the URL and nowhere else. */
  token: string;
  url: string;
  record: LinkRecord;
}

export function hashLinkToken(token: string): string {
  return sha256Hex(`keyplane:link:v1:${token}`);
}

function issueLink(
  purpose: LinkPurpose,
  endpoint: string,
  params: Record<string, string | undefined>,
  options: {
    identityId: string;
    emailId: string;
    deviceId: string | null;
    now: number;
    lifetimeMs: number;
  },
): IssuedLink {
  const token = randomToken(32);
  const url = new URL(endpoint);
  url.searchParams.set('token', token);
  for (const [name, value] of Object.entries(params))
    if (value !== undefined && value !== '') url.searchParams.set(name, value);
  return {
    token,
    url: url.toString(),
    record: {
      tokenHash: hashLinkToken(token),
      purpose,
      identityId: options.identityId,
      emailId: options.emailId,
      deviceId: options.deviceId,
      createdAt: options.now,
      expiresAt: options.now + options.lifetimeMs,
      usedAt: null,
    },
  };
}

/**
 * A magic sign-in link for a verified address, bound to the device that asked for it.
 * `endpoint` is the absolute URL of `GET /auth/magic`; `returnTo` (already validated) and
 * `project` ride along as query parameters for the landing page.
 */
export function issueMagicLink(options: {
  endpoint: string;
  identityId: string;
  emailId: string;
  deviceId: string;
  now: number;
  lifetimeMs: number;
  returnTo?: string;
  project?: string;
}): IssuedLink {
  return issueLink('signin', options.endpoint, { return: options.returnTo, project: options.project }, options);
}

/** A link that proves control of an address added to an account. Not bound to a device. */
export function issueEmailVerificationLink(options: {
  endpoint: string;
  identityId: string;
  emailId: string;
  now: number;
  lifetimeMs: number;
}): IssuedLink {
  return issueLink('verify_email', options.endpoint, {}, { ...options, deviceId: null });
}

/**
 * A link that lets an account an org provisioned create its first passkey (docs/scim.md):
 * mailed to a verified address, not bound to a device (it is opened wherever the mail is read).
 */
export function issueEnrolmentLink(options: {
  endpoint: string;
  identityId: string;
  emailId: string;
  now: number;
  lifetimeMs: number;
}): IssuedLink {
  return issueLink('enrol_passkey', options.endpoint, {}, { ...options, deviceId: null });
}

export type RedeemFailure = 'unknown' | 'used' | 'expired' | 'wrong_device';
export type Redemption = { ok: true; record: LinkRecord } | { ok: false; why: RedeemFailure; record?: LinkRecord };

export interface RedeemOptions {
  purpose: LinkPurpose;
  now: number;
  /** The device presenting the link (sign-in links only). */
  deviceId?: string | null;
  find(tokenHash: string): Promise<LinkRecord | null>;
  /** Marks the record used if it is still unused; true for exactly one caller. */
  consume(tokenHash: string, now: number): Promise<boolean>;
}

/**
 * Checks and consumes a link token. A sign-in link presented on another device is refused
 * *without* being consumed: mail scanners and a phone that opened the mail do not burn it,
 * and it still works on the device that asked for it. Consumption is one atomic conditional
 * update, so of two concurrent redemptions exactly one succeeds.
 */
export async function redeemMagicLink(token: string, options: RedeemOptions): Promise<Redemption> {
  const checked = await checkMagicLink(token, options);
  if (!checked.ok) return checked;
  if (!(await options.consume(checked.record.tokenHash, options.now)))
    return { ok: false, why: 'used', record: checked.record };
  return { ok: true, record: { ...checked.record, usedAt: options.now } };
}

/**
 * Every check of `redeemMagicLink` without using the link up: what a page that only asks for
 * confirmation (mail scanners open links by GET) shows before the POST that redeems.
 */
export async function checkMagicLink(token: string, options: Omit<RedeemOptions, 'consume'>): Promise<Redemption> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return { ok: false, why: 'unknown' };
  const record = await options.find(hashLinkToken(token));
  if (!record || record.purpose !== options.purpose) return { ok: false, why: 'unknown' };
  if (record.usedAt !== null) return { ok: false, why: 'used', record };
  if (options.now >= record.expiresAt) return { ok: false, why: 'expired', record };
  if (record.deviceId !== null && record.deviceId !== options.deviceId)
    return { ok: false, why: 'wrong_device', record };
  return { ok: true, record };
}

/**
 * A `return` target on the issuer itself, as a path (`/account?x=1`), or null. Accepts a path
 * or an absolute URL with the issuer's origin; refuses protocol-relative (`//evil`, also when
 * dot segments produce it: `/.//evil`), backslash tricks, other schemes and other origins.
 * The same rule as the gateway's `rd=` targets. Registered relying-party URIs are added by the caller.
 */
export function sameOriginReturn(value: string, issuer: string): string | null {
  return validateReturnUrl(value, issuer);
}
