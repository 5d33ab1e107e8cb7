import { fail } from '#lib/errors/keyplane-error.js';
import { enforceLimit } from '#lib/errors/rate-limited.js';
import { normalizeEmailAddress } from '#lib/magic/email-address.js';
import {
  checkMagicLink,
  issueEmailVerificationLink,
  redeemMagicLink,
  type RedeemFailure,
} from '#lib/magic/magic-link.js';
import { RateLimiter } from '#lib/runtime/security/rate-limiter.js';
import { randomId } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices } from '../context.js';
import { verificationMail } from '../mail/templates.js';
import { mailLocale } from '../pages/ui.js';

/** Addresses one account may hold. */
export const MAX_EMAILS = 10;
export const LINK_REASONS: Record<RedeemFailure, 'link_invalid' | 'link_used' | 'link_expired' | 'link_wrong_device'> =
  {
    unknown: 'link_invalid',
    used: 'link_used',
    expired: 'link_expired',
    wrong_device: 'link_wrong_device',
  };

/** Used and expired links are kept a day so their pages can say which; then they go. */
export const SPENT_LINKS_KEPT_MS = 86_400_000;

/** Mail bucket shared with magic links: one address gets at most `magicLinksPerAddressPerHour` mails an hour. */
export function addressBucket(email: string): string {
  return sha256Hex(`keyplane:address:v1:${email}`);
}

/** A well-formed, normalized address, or `invalid_email`. */
export function checkEmailAddress(input: string): string {
  const email = normalizeEmailAddress(input);
  if (!email) throw fail('invalid_email', 'that does not look like an email address');
  return email;
}

export type EmailServices = Pick<ControlPlaneServices, 'config' | 'storage' | 'state' | 'events' | 'mailer' | 'now'>;

export interface EmailAdded {
  email: string;
  verified: boolean;
  /** Whether a verification mail went out (false when the address was verified already). */
  sent: boolean;
  /** The receipt of `email.added`, when the address is new on the account and the ledger is on. */
  receipt?: string;
}

/**
 * Adds an address to the account and mails it a verification link. At most `MAX_EMAILS` per
 * account and `magicLinksPerAddressPerHour` mails per address, so the server never becomes a way
 * to flood someone's mailbox. Adding an address the account has verified sends nothing.
 */
export async function addEmail(services: EmailServices, identityId: string, input: string): Promise<EmailAdded> {
  const email = checkEmailAddress(input);
  const { config } = services;
  const limit = { max: config.limits.magicLinksPerAddressPerHour, windowMs: 3_600_000 };
  const at = services.now();
  const endpoint = new URL(`${config.issuer}/auth/email/verify`).toString();
  const lifetime = config.lifetimes.emailVerification;

  await services.storage.links.purgeExpired(at - SPENT_LINKS_KEPT_MS);
  const outcome = await services.storage.transaction(async (tx) => {
    const existing = await tx.emails.listByIdentity(identityId);
    if (existing.length >= MAX_EMAILS && !existing.some((e) => e.email === email))
      throw fail('too_many_emails', `an account holds at most ${MAX_EMAILS} addresses`);
    const emailId = randomId('eml');
    const row = await tx.emails.add({ emailId, identityId, email, createdAt: at, verifiedAt: null });
    if (row.verifiedAt !== null) return { row, sent: false as const };
    const added =
      row.emailId === emailId
        ? await services.events.record(tx, {
            type: 'email.added',
            at,
            outcome: 'success',
            identityId,
            emailId: row.emailId,
          })
        : {};
    const decision = await new RateLimiter(services.state).hit('verify-mail', addressBucket(email), limit);
    enforceLimit(decision, 'too many verification mails to this address; try again later');
    const link = issueEmailVerificationLink({
      endpoint,
      identityId,
      emailId: row.emailId,
      now: at,
      lifetimeMs: lifetime * 1000,
    });
    await tx.links.insert(link.record);
    return { row, sent: true as const, url: link.url, ...added };
  });
  if (outcome.sent) {
    const owner = await services.storage.identities.get(identityId);
    const locale = mailLocale(owner?.preferences, services.config.i18n.defaultLocale);
    services.mailer.enqueue(verificationMail(email, outcome.url, lifetime, locale));
  }
  return {
    email,
    verified: outcome.row.verifiedAt !== null,
    sent: outcome.sent,
    ...('receipt' in outcome && outcome.receipt ? { receipt: outcome.receipt } : {}),
  };
}

/**
 * Checks a verification link without consuming it (what the confirmation page shows) and names
 * the account that asked for it; throws its refusal.
 */
export async function checkVerificationLink(
  services: Pick<EmailServices, 'storage' | 'now'>,
  token: string,
): Promise<{ identityId: string }> {
  const checked = await checkMagicLink(token, {
    purpose: 'verify_email',
    now: services.now(),
    find: (hash) => services.storage.links.find(hash),
  });
  if (!checked.ok) throw fail(LINK_REASONS[checked.why]);
  return { identityId: checked.record.identityId };
}

/**
 * Consumes a verification link and marks its address verified. It does nothing else: no
 * session is created, merged or upgraded, whoever opens the link (docs/accounts.md#e-mail-addresses).
 */
export async function verifyEmail(
  services: Pick<EmailServices, 'storage' | 'events' | 'now'>,
  token: string,
): Promise<{ already: boolean; receipt?: string }> {
  const at = services.now();
  return services.storage.transaction(async (tx) => {
    const redemption = await redeemMagicLink(token, {
      purpose: 'verify_email',
      now: at,
      find: (hash) => tx.links.find(hash),
      consume: (hash, now) => tx.links.consume(hash, now),
    });
    if (!redemption.ok) throw fail(LINK_REASONS[redemption.why]);
    const { record } = redemption;
    const marked = await tx.emails.markVerified(record.emailId, at);
    // Throwing rolls the consumption back: the link still works if the other account lets the address go.
    if (marked === 'taken') throw fail('email_taken', 'another account verified this address first');
    if (marked === 'already') return { already: true };
    const recorded = await services.events.record(tx, {
      type: 'email.verified',
      at,
      outcome: 'success',
      identityId: record.identityId,
      emailId: record.emailId,
    });
    return { already: false, ...recorded };
  });
}
