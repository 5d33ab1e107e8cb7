import { REASONS, type Reason } from '../../../lib/errors/reasons.js';
import { formError, html, page, type FormErrorView, type SafeHtml } from './layout.js';

/** What a person reads when a mailed link cannot be used, by reason: the cause and the way on. */
const EXPLANATIONS: Partial<Record<Reason, { heading: string; text: string }>> = {
  link_invalid: {
    heading: 'This link does not work',
    text: 'The link is incomplete or was never issued. Copy the whole link from the mail, or ask for a new one.',
  },
  link_used: {
    heading: 'This link was used already',
    text: 'Every link works once. If that was not you, sign in and check your sessions on the account page.',
  },
  link_expired: { heading: 'This link has expired', text: 'Links work for a short time only. Ask for a new one.' },
  link_wrong_device: {
    heading: 'Open this link in the browser that asked for it',
    text: 'For your safety a sign-in link works only in the browser where it was requested. Open it there, or ask for a new link in this browser. This link was not used up.',
  },
  invalid_return: {
    heading: 'This link points somewhere we do not know',
    text: 'The page it would return to is not one of ours or of a registered application, so the link was not used.',
  },
  email_taken: {
    heading: 'This address belongs to another account',
    text: 'Another account verified this address first. An address can be verified on one account only.',
  },
  rate_limited: { heading: 'Too many attempts', text: 'Wait a little and try again.' },
};

export interface LinkPageOptions {
  nonce: string;
  reason: Reason;
  /** The relying party's display name from the link (plain text, escaped). */
  project?: string | undefined;
  /** Where the way-on link goes, and what it says. */
  retryHref?: string;
  retryLabel?: string;
}

/** The refusal page of a mailed link: a clear heading, the reason code, what to do next. */
export function linkRefusalPage(options: LinkPageOptions): string {
  const explanation = EXPLANATIONS[options.reason] ?? {
    heading: 'This link cannot be used',
    text: REASONS[options.reason].description,
  };
  return page({
    title: explanation.heading,
    nonce: options.nonce,
    body: html`<h1>${explanation.heading}</h1>
${projectLine(options.project)}<p role="alert" class="error">${explanation.text}</p>
<p class="muted">Reason: <code>${options.reason}</code></p>
<p><a href="${options.retryHref ?? '/auth'}">${options.retryLabel ?? 'Go to sign-in'}</a></p>`,
  });
}

export function projectLine(project: string | undefined): SafeHtml {
  return project ? html`<p>You were signing in to continue to <strong>${project}</strong>.</p>\n` : html``;
}

/** After a magic sign-in whose return is a relying party's URI: a link to it, never a redirect. */
export function signedInContinuePage(nonce: string, href: string, project: string | undefined): string {
  return page({
    title: 'Signed in',
    nonce,
    body: html`<h1>You are signed in</h1>
${projectLine(project)}<p><a href="${href}" data-action="continue" rel="noreferrer">Continue to ${new URL(href).host}</a></p>
<p class="muted">Only continue if you started this sign-in. <a href="/account">Go to your account</a> instead.</p>`,
  });
}

/**
 * What the mailed verification link shows: a button that POSTs the token. Mail scanners and link
 * previews open links by GET, so the GET alone must verify nothing.
 */
export function emailConfirmPage(nonce: string, token: string): string {
  return page({
    title: 'Confirm your address',
    nonce,
    body: html`<h1>Confirm your email address</h1>
<p>Press the button to confirm this address on your Keyplane account. This does not sign you in.</p>
<form method="post" action="/auth/email/verify" data-action="verify-email">
<input type="hidden" name="token" value="${token}">
<button type="submit">Confirm this address</button>
</form>`,
  }).replace('<meta name="referrer" content="no-referrer">', '<meta name="referrer" content="same-origin">');
}

/** The page after an address was verified: verified, and explicitly not signed in by it. */
export function emailVerifiedPage(nonce: string, already: boolean): string {
  return page({
    title: 'Address verified',
    nonce,
    body: html`<h1>${already ? 'This address was verified already' : 'Address verified'}</h1>
<p role="status">Your email address is confirmed on your Keyplane account. This did not sign you in or change any session.</p>
<p><a href="/account">Go to your account</a></p>`,
  });
}

/** Human text for refusals shown on the no-JavaScript form pages. */
const FORM_ERRORS: Partial<Record<Reason, string>> = {
  invalid_recovery_code: 'That account name or backup code is not right (a code works only once).',
  locked_out: 'Too many wrong codes. Backup codes for this account are locked for a while; try again later.',
  rate_limited: 'Too many attempts. Wait a minute and try again.',
  invalid_email: 'That does not look like an e-mail address.',
  invalid_return: 'The page to return to is not one we know, so no link was sent.',
  invalid_request: 'Please fill in every field.',
  origin_mismatch: 'This form was sent from another site and was refused.',
};

/** The refusal of a no-JavaScript form, announced and tied to its fields (layout.ts `formError`). */
export function reasonError(reason: Reason | undefined): FormErrorView {
  return formError(
    reason &&
      html`${FORM_ERRORS[reason] ?? REASONS[reason].description} <span class="muted">(<code>${reason}</code>)</span>`,
  );
}

/** Sign-in with a backup code: a plain form, works without JavaScript. */
export function recoveryFormPage(nonce: string, options: { user?: string; reason?: Reason } = {}): string {
  // Which of the two was wrong is not told (an account name is not confirmed): both are marked.
  const error = reasonError(options.reason);
  return page({
    title: 'Sign in with a backup code',
    nonce,
    body: html`<h1>Sign in with a backup code</h1>
<p>Lost your passkeys? Each backup code signs you in once. You are then signed in at the lowest level
(<code>recovery</code>): add a new passkey from your account page.</p>
${error.region}<form method="post" action="/auth/recovery/verify">
  <label for="recovery-user">Username</label>
  <input id="recovery-user" name="user" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="64" value="${options.user ?? ''}"${error.field({ first: true })}>
  <label for="recovery-code">Backup code</label>
  <input id="recovery-code" name="code" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" required maxlength="64" placeholder="XXXX-XXXX-XXXX-XXXX"${error.field()}>
  <button type="submit">Sign in</button>
</form>
<p><a href="/auth">Back to sign-in with a passkey</a> · <a href="/auth/magic/request">E-mail me a sign-in link</a></p>`,
  });
}

/** Ask for a magic link: a plain form, works without JavaScript. `return`/`project` ride along hidden. */
export function magicRequestPage(
  nonce: string,
  options: { email?: string; returnTo?: string; project?: string; reason?: Reason } = {},
): string {
  const error = reasonError(options.reason);
  return page({
    title: 'E-mail me a sign-in link',
    nonce,
    body: html`<h1>E-mail me a sign-in link</h1>
${projectLine(options.project)}<p>If the address is verified on your account, we mail you a link. It works once, for a few minutes, and only in this browser.</p>
${error.region}<form method="post" action="/auth/magic/request">
  <label for="magic-email">E-mail address</label>
  <input id="magic-email" name="email" type="email" autocomplete="email" required maxlength="254" value="${options.email ?? ''}"${error.field({ first: true })}>
  ${options.returnTo ? html`<input type="hidden" name="return" value="${options.returnTo}">` : ''}
  ${options.project ? html`<input type="hidden" name="project" value="${options.project}">` : ''}
  <button type="submit">Send the link</button>
</form>
<p><a href="/auth">Back to sign-in with a passkey</a> · <a href="/auth/recovery">Use a backup code</a></p>`,
  });
}

export function magicRequestedPage(nonce: string, message: string): string {
  return page({
    title: 'Check your mail',
    nonce,
    body: html`<h1>Check your mail</h1>
<p role="status">${message}</p>
<p class="muted">Open the link in this browser. Nothing arrived? Check the spam folder, or <a href="/auth/magic/request">ask again</a> in a few minutes.</p>`,
  });
}
