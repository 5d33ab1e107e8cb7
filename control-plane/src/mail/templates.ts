import { escapeHtml } from '../../../lib/util/html.js';
import type { OutgoingMail } from './mailer.js';

function minutes(seconds: number): string {
  const m = Math.round(seconds / 60);
  return `${m} minute${m === 1 ? '' : 's'}`;
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
    `The link works once, for ${minutes(lifetimeSeconds)}, and only in the browser where you asked for it.`,
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
    `The link works once, for ${minutes(lifetimeSeconds)}. It does not sign you in.`,
    'If you did not add it, ignore this mail and the address stays unverified.',
  ];
  return {
    to,
    subject: 'Confirm your email address for Keyplane',
    text: `${lines.join('\n\n')}\n\nConfirm: ${url}\n`,
    html: htmlBody(lines, { href: url, label: 'Confirm this address' }),
  };
}
