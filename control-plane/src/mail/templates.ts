import { escapeHtml } from '../../../lib/util/html.js';
import type { OutgoingMail } from './mailer.js';

/** A lifetime as a person says it: "15 minutes", "24 hours", "3 days" (never "1440 minutes"). */
export function describeLifetime(seconds: number): string {
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;
  if (seconds >= 2 * 86_400 && seconds % 86_400 === 0) return plural(seconds / 86_400, 'day');
  if (seconds >= 3_600 && seconds % 3_600 === 0) return plural(seconds / 3_600, 'hour');
  return plural(Math.max(1, Math.round(seconds / 60)), 'minute');
}

function htmlBody(paragraphs: string[], link: { href: string; label: string }): string {
  return `<!doctype html><html><body style="font-family:system-ui,sans-serif;line-height:1.5">
${paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n')}
<p><a href="${escapeHtml(link.href)}">${escapeHtml(link.label)}</a></p>
</body></html>`;
}

/** The sign-in link mail. It says which device must open it, because another device is refused. */
export function magicLinkMail(to: string, url: string, lifetimeSeconds: number): OutgoingMail {
  const lines = [
    'Someone (hopefully you) asked to sign in to Keyplane with this address.',
    `The link works once, for ${describeLifetime(lifetimeSeconds)}, and only in the browser where you asked for it.`,
    'If you did not ask, ignore this mail: nothing happens without the link.',
  ];
  return {
    to,
    subject: 'Your Keyplane sign-in link',
    text: `${lines.join('\n\n')}\n\nSign in: ${url}\n`,
    html: htmlBody(lines, { href: url, label: 'Sign in to Keyplane' }),
  };
}

/** The address-verification mail. Opening it verifies the address and signs no one in. */
export function verificationMail(to: string, url: string, lifetimeSeconds: number): OutgoingMail {
  const lines = [
    'This address was added to a Keyplane account. Open the link to confirm that it is yours.',
    `The link works once, for ${describeLifetime(lifetimeSeconds)}. It does not sign you in.`,
    'If you did not add it, ignore this mail and the address stays unverified.',
  ];
  return {
    to,
    subject: 'Confirm your email address for Keyplane',
    text: `${lines.join('\n\n')}\n\nConfirm: ${url}\n`,
    html: htmlBody(lines, { href: url, label: 'Confirm this address' }),
  };
}
