import { refuseRequiredDomain, requiredSsoFor } from '../federation/required-sso.js';
import { addressStillCounts } from '../orgs/claimed-addresses.js';
import { meetsAssurance } from '#lib/assurance/assurance.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { issueMagicLink, redeemMagicLink } from '#lib/magic/magic-link.js';
import { RateLimiter } from '#lib/runtime/security/rate-limiter.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import { addressBucket, LINK_REASONS, SPENT_LINKS_KEPT_MS } from '../email/addresses.js';
import { magicLinkMail } from '../mail/templates.js';
import { mailLocale } from '../pages/ui.js';
import { openSession, type SignInBrowser } from '../sessions/start-session.js';
import type { Stores } from '../storage/interface.js';

/** RFC 8176 registers no value for a mailed link; `email` is the conventional one (documented). */
const MAGIC_AMR = ['email'];

export type MagicServices = Pick<ControlPlaneServices, 'config' | 'storage' | 'state' | 'events' | 'mailer' | 'now'>;

/** Carried by the link to the page it lands on: an allowed return target and a project name. */
export interface LinkExtras {
  returnTo?: string;
  project?: string;
}

async function issueFor(
  services: Pick<MagicServices, 'config' | 'now'>,
  tx: Stores,
  target: { emailId: string; identityId: string },
  deviceId: string,
  extras: LinkExtras,
) {
  const endpoint = new URL(`${services.config.issuer}/auth/magic`).toString();
  const link = issueMagicLink({
    endpoint,
    identityId: target.identityId,
    emailId: target.emailId,
    deviceId,
    now: services.now(),
    lifetimeMs: services.config.lifetimes.magicLink * 1000,
    ...extras,
  });
  await tx.links.insert(link.record);
  return link;
}

/**
 * Mails a sign-in link bound to `deviceId` when `email` (normalized) is verified on an account.
 * It returns nothing the caller could tell apart: known or unknown address, under or over the
 * per-address limit, the outcome is the same, and the `magic_link.sent` receipt is not returned.
 */
export async function requestSignInLink(
  services: MagicServices,
  email: string,
  deviceId: string,
  extras: LinkExtras,
): Promise<void> {
  // Decided by the domain alone (docs/federation.md#required-sso), before anything tells accounts apart.
  await refuseRequiredDomain(services.storage, email);
  const limit = await new RateLimiter(services.state).hit('magic-mail', addressBucket(email), {
    max: services.config.limits.magicLinksPerAddressPerHour,
    windowMs: 3_600_000,
  });
  await services.storage.links.purgeExpired(services.now() - SPENT_LINKS_KEPT_MS);
  const found = limit.allowed ? await services.storage.emails.findVerified(email) : null;
  // An address under another org's proved mail domain is not mailed: it no longer counts as verified.
  const target = found && (await addressStillCounts(services.storage, found)) ? found : null;
  // A required-SSO account's address elsewhere is not mailed either, with the answer an unknown one gets.
  if (!target || (await requiredSsoFor(services.storage, target.identityId))) return;
  const link = await services.storage.transaction(async (tx) => {
    const issued = await issueFor(services, tx, target, deviceId, extras);
    await services.events.record(tx, {
      type: 'magic_link.sent',
      at: services.now(),
      outcome: 'success',
      identityId: target.identityId,
      emailId: target.emailId,
      deviceId,
    });
    return issued;
  });
  // The mail follows the account's language (docs/i18n.md), not the browser that asked.
  const owner = await services.storage.identities.get(target.identityId);
  const locale = mailLocale(owner?.preferences, services.config.i18n.defaultLocale);
  services.mailer.enqueue(magicLinkMail(email, link.url, services.config.lifetimes.magicLink, locale));
}

export interface DryRunLink {
  link: string;
  expiresAt: number;
  receipt?: string;
}

/**
 * A dry run returns the link instead of mailing it (for testing a deployment's mail path and
 * for support). With a session, for the session's own verified address; for any verified
 * address only for an operator: a console session of the same account and the everyday session at
 * `sensitive` (docs/console.md), and that is receipted (`founder` keeps its name: an operator's run).
 */
export async function dryRunSignInLink(
  services: Pick<MagicServices, 'config' | 'storage' | 'events' | 'now'>,
  session: SessionView | undefined,
  email: string,
  extras: LinkExtras,
  operator = false,
): Promise<DryRunLink> {
  if (!session) throw fail('unauthorized', 'a dry run needs a session');
  const found = await services.storage.emails.findVerified(email);
  const target = found && (await addressStillCounts(services.storage, found)) ? found : null;
  const own = target !== null && target.identityId === session.identityId;
  let founder = false;
  if (!own) {
    founder = operator && meetsAssurance(session.assurance, 'sensitive');
    if (!founder)
      throw fail(
        'forbidden',
        'a dry run is for your own verified address (an operator in the console at sensitive assurance may use any)',
      );
    if (!target) throw fail('not_found', 'no account has this address verified');
  }
  const at = services.now();
  const { link, receipt } = await services.storage.transaction(async (tx) => {
    const issued = await issueFor(services, tx, target!, session.deviceId, extras);
    const recorded = await services.events.record(tx, {
      type: 'magic_link.dry_run',
      at,
      outcome: 'success',
      identityId: target!.identityId,
      actorIdentityId: session.identityId,
      actorSessionId: session.id,
      emailId: target!.emailId,
      founder,
    });
    return { link: issued, ...recorded };
  });
  return { link: link.url, expiresAt: link.record.expiresAt, ...(receipt ? { receipt } : {}) };
}

/** The browser redeeming a link: its device cookie (the link is bound to it) and its session (`previous`). */
export interface RedeemingBrowser extends SignInBrowser {
  /** The device id this browser presents (its cookie, else its session's), or null. */
  presentedDeviceId: string | null;
}

/**
 * Consumes a sign-in link on the device that asked for it and signs that browser in at `email`.
 * A link is an authentication, so the browser always leaves with a new session token
 * (docs/security.md#session-tokens): a session it already had with the same account goes on
 * under the new token, keeping its state when it proved `email` or more (never downgraded),
 * else raised to `email`; otherwise a new session starts. Returns the cookie value to set.
 */
export async function redeemSignInLink(
  services: Pick<MagicServices, 'config' | 'events' | 'storage' | 'state' | 'now'>,
  token: string,
  browser: RedeemingBrowser,
): Promise<{ sessionToken: string }> {
  const at = services.now();
  return services.storage.transaction(async (tx) => {
    const redemption = await redeemMagicLink(token, {
      purpose: 'signin',
      now: at,
      deviceId: browser.presentedDeviceId,
      find: (hash) => tx.links.find(hash),
      consume: (hash, now) => tx.links.consume(hash, now),
    });
    if (!redemption.ok) throw fail(LINK_REASONS[redemption.why]);
    const { record } = redemption;
    // The address may have been verified by the link's account and since moved: check it still is.
    const email = await tx.emails.get(record.emailId);
    if (
      !email ||
      email.verifiedAt === null ||
      email.identityId !== record.identityId ||
      !(await addressStillCounts(tx, email))
    )
      throw fail('link_invalid', 'this address is no longer verified on the account');
    const { sessionId, token: sessionToken } = await openSession(services, tx, browser, {
      identityId: record.identityId,
      deviceId: record.deviceId!,
      assurance: 'email',
      amr: MAGIC_AMR,
      keepStrongerSession: true,
    });
    await services.events.record(tx, {
      type: 'magic_link.redeemed',
      at,
      outcome: 'success',
      identityId: record.identityId,
      emailId: record.emailId,
      deviceId: record.deviceId!,
      sessionId,
    });
    return { sessionToken };
  });
}
