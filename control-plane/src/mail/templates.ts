import type { Locale } from '#lib/i18n/locales.js';
import { translatorFor, type Translator } from '#lib/i18n/translate.js';
import { escapeHtml } from '#lib/html/escape-html.js';
import type { OutgoingMail } from './mailer.js';

/** A lifetime as a person says it: "15 minutes", "24 hours", "3 days" (never "1440 minutes"), in `locale`. */
export function describeLifetime(seconds: number, locale: Locale = 'en'): string {
  const { t } = translatorFor(locale);
  if (seconds >= 2 * 86_400 && seconds % 86_400 === 0) return t('mail.lifetime', { unit: 'day', n: seconds / 86_400 });
  if (seconds >= 3_600 && seconds % 3_600 === 0) return t('mail.lifetime', { unit: 'hour', n: seconds / 3_600 });
  return t('mail.lifetime', { unit: 'minute', n: Math.max(1, Math.round(seconds / 60)) });
}

function htmlBody(ui: Translator, paragraphs: string[], link: { href: string; label: string }): string {
  return `<!doctype html><html lang="${ui.locale}" dir="${ui.dir}"><body style="font-family:system-ui,sans-serif;line-height:1.5">
${paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n')}
<p><a href="${escapeHtml(link.href)}">${escapeHtml(link.label)}</a></p>
</body></html>`;
}

/**
 * The sign-in link mail, in the account's language (its preference `lang`, else `i18n.defaultLocale`).
 * It says which device must open it, because another device is refused.
 */
export function magicLinkMail(to: string, url: string, lifetimeSeconds: number, locale: Locale = 'en'): OutgoingMail {
  const ui = translatorFor(locale);
  const lifetime = describeLifetime(lifetimeSeconds, locale);
  const lines = [ui.t('mail.magic.asked'), ui.t('mail.magic.works', { lifetime }), ui.t('mail.magic.ignore')];
  return {
    to,
    subject: ui.t('mail.magic.subject'),
    text: `${lines.join('\n\n')}\n\n${ui.t('mail.magic.action')}: ${url}\n`,
    html: htmlBody(ui, lines, { href: url, label: ui.t('mail.magic.button') }),
  };
}

/** The address-verification mail, in the account's language. Opening it verifies the address and signs no one in. */
export function verificationMail(
  to: string,
  url: string,
  lifetimeSeconds: number,
  locale: Locale = 'en',
): OutgoingMail {
  const ui = translatorFor(locale);
  const lifetime = describeLifetime(lifetimeSeconds, locale);
  const lines = [ui.t('mail.verify.added'), ui.t('mail.verify.works', { lifetime }), ui.t('mail.verify.ignore')];
  return {
    to,
    subject: ui.t('mail.verify.subject'),
    text: `${lines.join('\n\n')}\n\n${ui.t('mail.verify.action')}: ${url}\n`,
    html: htmlBody(ui, lines, { href: url, label: ui.t('mail.verify.button') }),
  };
}

/**
 * The passkey enrolment mail of an account an org provisioned (docs/scim.md#enrolment-links): who
 * made the account, for which address, and how long the link works.
 */
export function enrolmentMail(
  to: string,
  url: string,
  orgName: string,
  lifetimeSeconds: number,
  locale: Locale = 'en',
): OutgoingMail {
  const ui = translatorFor(locale);
  const lifetime = describeLifetime(lifetimeSeconds, locale);
  const lines = [
    ui.t('mail.enrol.provisioned', { org: orgName, address: to }),
    ui.t('mail.enrol.works', { lifetime }),
    ui.t('mail.enrol.ignore', { org: orgName }),
  ];
  return {
    to,
    subject: ui.t('mail.enrol.subject', { org: orgName }),
    text: `${lines.join('\n\n')}\n\n${ui.t('mail.enrol.action')}: ${url}\n`,
    html: htmlBody(ui, lines, { href: url, label: ui.t('mail.enrol.action') }),
  };
}
