import { REASONS, type Reason } from '#lib/errors/reasons.js';
import type { FastifyRequest } from 'fastify';
import type { MessageKey } from '#lib/i18n/translate.js';
import { formError, html, page, raw, type FormErrorView, type SafeHtml } from './layout.js';
import { type PageUi, uiOf } from './ui.js';

/** What a person reads when a mailed link cannot be used, by reason: the cause and the way on. */
const EXPLANATIONS: Partial<Record<Reason, { heading: MessageKey; text: MessageKey }>> = {
  link_invalid: { heading: 'link.invalid.heading', text: 'link.invalid.text' },
  link_used: { heading: 'link.used.heading', text: 'link.used.text' },
  link_expired: { heading: 'link.expired.heading', text: 'link.expired.text' },
  link_wrong_device: { heading: 'link.wrong_device.heading', text: 'link.wrong_device.text' },
  invalid_return: { heading: 'link.invalid_return.heading', text: 'link.invalid_return.text' },
  email_taken: { heading: 'link.email_taken.heading', text: 'link.email_taken.text' },
  rate_limited: { heading: 'link.rate_limited.heading', text: 'link.rate_limited.text' },
  account_suspended: { heading: 'link.suspended.heading', text: 'link.suspended.text' },
};

export interface LinkPageOptions {
  request: FastifyRequest;
  reason: Reason;
  /** The relying party's display name from the link (plain text, escaped). */
  project?: string | undefined;
  /** Where the way-on link goes, and what it says. */
  retryHref?: string;
  retryLabel?: MessageKey;
}

/** The refusal page of a mailed link: a clear heading, the reason code, what to do next. */
export function linkRefusalPage(options: LinkPageOptions): string {
  // The switcher leads on to the way-on page, never back to the link itself.
  const ui = uiOf(options.request, options.retryHref ?? '/auth');
  const explanation = EXPLANATIONS[options.reason];
  const heading = ui.t(explanation?.heading ?? 'link.other.heading');
  const text = explanation
    ? ui.t(explanation.text)
    : (ui.reason(options.reason) ?? REASONS[options.reason].description);
  return page({
    title: heading,
    nonce: options.request.kp.cspNonce,
    ui,
    body: html`<h1>${heading}</h1>
${projectLine(ui, options.project)}<p role="alert" class="error">${text}</p>
<p class="muted">${raw(ui.rich('link.reason', { code: (c) => `<code>${c}</code>` }, { reason: options.reason }))}</p>
<p><a href="${options.retryHref ?? '/auth'}">${ui.t(options.retryLabel ?? 'link.go_signin')}</a></p>`,
  });
}

export function projectLine(ui: PageUi, project: string | undefined): SafeHtml {
  return project
    ? html`<p>${raw(ui.rich('link.project', { strong: (c) => `<strong>${c}</strong>` }, { project }))}</p>\n`
    : html``;
}

/** After a magic sign-in whose return is a relying party's URI: a link to it, never a redirect. */
export function signedInContinuePage(request: FastifyRequest, href: string, project: string | undefined): string {
  const ui = uiOf(request);
  return page({
    title: ui.t('link.signed_in.title'),
    nonce: request.kp.cspNonce,
    ui,
    body: html`<h1>${ui.t('link.signed_in.heading')}</h1>
${projectLine(ui, project)}<p><a href="${href}" data-action="continue" rel="noreferrer">${ui.t('link.signed_in.continue', { host: new URL(href).host })}</a></p>
<p class="muted">${raw(ui.rich('link.signed_in.warning', { account: (c) => `<a href="/account">${c}</a>` }))}</p>`,
  });
}

/**
 * What the mailed verification link shows: a button that POSTs the token. Mail scanners and link
 * previews open links by GET, so the GET alone must verify nothing.
 */
export function emailConfirmPage(request: FastifyRequest, token: string): string {
  // Opening the link again only shows this page again (the GET verifies nothing), so the switcher re-renders it.
  const ui = uiOf(request, `/auth/email/verify?token=${encodeURIComponent(token)}`);
  return page({
    title: ui.t('email.confirm.title'),
    nonce: request.kp.cspNonce,
    ui,
    body: html`<h1>${ui.t('email.confirm.heading')}</h1>
<p>${ui.t('email.confirm.text')}</p>
<form method="post" action="/auth/email/verify" data-action="verify-email">
<input type="hidden" name="token" value="${token}">
<button type="submit">${ui.t('email.confirm.button')}</button>
</form>`,
  });
}

/**
 * The page a passkey enrolment link opens (docs/scim.md#enrolment-links): who made the account, and
 * a button that creates its passkey. Opening it uses nothing up (mail scanners open links by GET).
 */
export function enrolmentPage(request: FastifyRequest, view: { token: string; org: string; account: string }): string {
  const ui = uiOf(request, `/auth/enrol?token=${encodeURIComponent(view.token)}`);
  return page({
    title: ui.t('enrol.title'),
    nonce: request.kp.cspNonce,
    ui,
    scripts: ['/assets/enrol.js'],
    scriptLines: { done: ui.t('enrol.done') },
    body: html`<h1>${ui.t('enrol.title')}</h1>
<p>${ui.t('enrol.text', { org: view.org, account: view.account })}</p>
<p id="enrol-needs-js" class="muted">${ui.t('enrol.needs_js')}</p>
<form id="enrol-form" hidden>
<input type="hidden" name="token" value="${view.token}">
<button type="submit" data-action="enrol">${ui.t('enrol.button')}</button>
</form>
<p id="status" role="status" aria-live="polite"></p>`,
  });
}

/** The page after an address was verified: verified, and explicitly not signed in by it. */
export function emailVerifiedPage(request: FastifyRequest, already: boolean): string {
  const ui = uiOf(request, '/account');
  return page({
    title: ui.t('email.verified.title'),
    nonce: request.kp.cspNonce,
    ui,
    body: html`<h1>${ui.t(already ? 'email.verified.already' : 'email.verified.title')}</h1>
<p role="status">${ui.t('email.verified.text')}</p>
<p><a href="/account">${ui.t('common.go_account')}</a></p>`,
  });
}

/** Human text for refusals shown on the no-JavaScript form pages. */
const FORM_ERRORS: Partial<Record<Reason, MessageKey>> = {
  invalid_recovery_code: 'form_error.invalid_recovery_code',
  locked_out: 'form_error.locked_out',
  rate_limited: 'form_error.rate_limited',
  invalid_email: 'form_error.invalid_email',
  invalid_return: 'form_error.invalid_return',
  invalid_request: 'form_error.invalid_request',
  origin_mismatch: 'form_error.origin_mismatch',
};

/** The refusal of a no-JavaScript form, in the page's language, announced and tied to its fields (layout.ts `formError`). */
export function reasonError(ui: PageUi, reason: Reason | undefined): FormErrorView {
  if (!reason) return formError(undefined);
  const key = FORM_ERRORS[reason];
  // English keeps the reason's documented description; other languages its translation, or a plain "did not work".
  const text = key
    ? ui.t(key)
    : ui.locale === 'en'
      ? REASONS[reason].description
      : (ui.reason(reason) ?? ui.t('form_error.other'));
  return formError(html`${text} <span class="muted">(<code>${reason}</code>)</span>`);
}

/**
 * A refusal shown on a management page (apps, SAML providers, connectors): English keeps the
 * refusal's own message, which names the field; another language its reason's translation, or
 * the plain "did not work". The reason code is always shown, for support.
 */
export function refusalText(ui: PageUi, error: { reason: string; message: string }): SafeHtml {
  const text = ui.locale === 'en' ? error.message : (ui.reason(error.reason) ?? ui.t('form_error.other'));
  return html`${text} <span class="muted">(<code>${error.reason}</code>)</span>`;
}

/** Sign-in with a backup code: a plain form, works without JavaScript. */
export function recoveryFormPage(request: FastifyRequest, options: { user?: string; reason?: Reason } = {}): string {
  const ui = uiOf(request, request.method === 'GET' ? undefined : '/auth/recovery');
  // Which of the two was wrong is not told (an account name is not confirmed): both are marked.
  const error = reasonError(ui, options.reason);
  return page({
    title: ui.t('recovery.title'),
    nonce: request.kp.cspNonce,
    ui,
    body: html`<h1>${ui.t('recovery.title')}</h1>
<p>${raw(ui.rich('recovery.explain', { code: (c) => `<code>${c}</code>` }))}</p>
${error.region}<form method="post" action="/auth/recovery/verify">
  <label for="recovery-user">${ui.t('signin.username')}</label>
  <input id="recovery-user" name="user" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="64" value="${options.user ?? ''}"${error.field({ first: true })}>
  <label for="recovery-code">${ui.t('recovery.code')}</label>
  <input id="recovery-code" name="code" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" required maxlength="64" placeholder="XXXX-XXXX-XXXX-XXXX"${error.field()}>
  <button type="submit">${ui.t('recovery.button')}</button>
</form>
<p><a href="/auth">${ui.t('recovery.back')}</a> · <a href="/auth/magic/request">${ui.t('magic.title')}</a></p>`,
  });
}

/** Ask for a magic link: a plain form, works without JavaScript. `return`/`project` ride along hidden. */
export function magicRequestPage(
  request: FastifyRequest,
  options: { email?: string; returnTo?: string; project?: string; reason?: Reason } = {},
): string {
  // The switcher keeps only the checked return and project, never a refused return from the query.
  const kept = new URLSearchParams();
  if (options.returnTo) kept.set('return', options.returnTo);
  if (options.project) kept.set('project', options.project);
  const ui = uiOf(request, `/auth/magic/request${kept.size ? `?${kept.toString()}` : ''}`);
  const error = reasonError(ui, options.reason);
  return page({
    title: ui.t('magic.title'),
    nonce: request.kp.cspNonce,
    ui,
    body: html`<h1>${ui.t('magic.title')}</h1>
${projectLine(ui, options.project)}<p>${ui.t('magic.explain')}</p>
${error.region}<form method="post" action="/auth/magic/request">
  <label for="magic-email">${ui.t('magic.email')}</label>
  <input id="magic-email" name="email" type="email" autocomplete="email" required maxlength="254" value="${options.email ?? ''}"${error.field({ first: true })}>
  ${options.returnTo ? html`<input type="hidden" name="return" value="${options.returnTo}">` : ''}
  ${options.project ? html`<input type="hidden" name="project" value="${options.project}">` : ''}
  <button type="submit">${ui.t('magic.button')}</button>
</form>
<p><a href="/auth">${ui.t('recovery.back')}</a> · <a href="/auth/recovery">${ui.t('magic.use_backup')}</a></p>`,
  });
}

/** After a request for a link: the same words whether or not the address has an account. */
export function magicRequestedPage(request: FastifyRequest): string {
  const ui = uiOf(request);
  return page({
    title: ui.t('magic.sent.title'),
    nonce: request.kp.cspNonce,
    ui,
    body: html`<h1>${ui.t('magic.sent.title')}</h1>
<p role="status">${ui.t('magic.sent.text')}</p>
<p class="muted">${raw(ui.rich('magic.sent.hint', { again: (c) => `<a href="/auth/magic/request">${c}</a>` }))}</p>`,
  });
}
