import type { FastifyReply, FastifyRequest } from 'fastify';
import { html, page, raw, type SafeHtml } from '../../pages/layout.js';
import { describeScope } from '#lib/apis/api-declaration.js';
import { type PageUi, uiOf } from '../../pages/ui.js';
import type { MessageKey } from '#lib/i18n/translate.js';
import { accessRuleLine } from '../../pages/access-rules.js';
import type { AttributeSource } from '#lib/saml/provider.js';
import type { AccountChoiceView, NotAdmittedView, OneTapView } from '../../oidc/authorize/views.js';

/** A SAML attribute source in words, with the names it is sent under (docs/saml.md#consent). */
const RELEASE_KEYS: Record<AttributeSource, MessageKey> = {
  sub: 'consent.saml.sub',
  username: 'consent.saml.username',
  display_name: 'consent.saml.display_name',
  email: 'consent.saml.email',
  assurance: 'consent.saml.assurance',
  amr: 'consent.saml.amr',
};

function releaseLine(ui: PageUi, part: { source: AttributeSource; names: string[] }): string {
  return ui.t(RELEASE_KEYS[part.source], { names: ui.nameList(part.names) });
}
import { contentSecurityPolicy } from '../../plugins/security-headers.js';

/** Served at WEB_MESSAGE_SCRIPT: hands the authorization response to the opener, at one origin only. */
export const WEB_MESSAGE_SCRIPT = '/auth/authorize/web-message.js';

export const WEB_MESSAGE_JS = `// response_mode=web_message: post the response to the window that opened this popup, and only
// to the origin of the client's registered redirect URI. postMessage drops the message when the
// opener is on any other origin, so a code never reaches an unregistered page.
const holder = document.getElementById('kp-response');
const origin = holder.dataset.origin;
const response = JSON.parse(holder.dataset.response);
if (window.opener && origin) {
  window.opener.postMessage(response, origin);
  window.close();
} else {
  // The line comes translated from the page (data-msg-orphan, docs/i18n.md).
  const status = document.getElementById('kp-status');
  status.textContent = status.dataset.msgOrphan || 'Return to the app: this window was not opened by it.';
}
`;

/** Served at FORM_POST_SCRIPT: submits the authorization response to the client at once. */
export const FORM_POST_SCRIPT = '/auth/authorize/form-post.js';

export const FORM_POST_JS = `// response_mode=form_post (OAuth 2.0 Form Post Response Mode §2): submit the response to the
// client's registered redirect URI at once. The form's own submit method is called through the
// prototype, so no input name can shadow it; the button in <noscript> does the same by hand.
const form = document.getElementById('kp-form-post');
HTMLFormElement.prototype.submit.call(form);
`;

/** The web_message response: a page whose nonce'd module script posts `response` to the opener at `origin`. */
export function sendWebMessage(
  request: FastifyRequest,
  reply: FastifyReply,
  origin: string,
  response: Record<string, string>,
): FastifyReply {
  reply.code(200).type('text/html; charset=utf-8');
  const ui = uiOf(request);
  return reply.send(
    page({
      title: ui.t('returning.title'),
      nonce: request.kp.cspNonce,
      ui,
      scripts: [WEB_MESSAGE_SCRIPT],
      body: html`<h1>${ui.t('returning.heading')}</h1>
<div id="kp-response" hidden data-origin="${origin}" data-response="${JSON.stringify(response)}"></div>
<p id="kp-status" role="status" aria-live="polite" data-msg-orphan="${ui.t('returning.orphan')}">${ui.t('returning.close')}</p>`,
    }),
  );
}

const strong = (c: string) => `<strong>${c}</strong>`;
const muted = (c: string) => `<span class="muted">${c}</span>`;

const SCOPE_TEXT: Record<string, MessageKey> = {
  openid: 'consent.scope.openid',
  email: 'consent.scope.email',
  profile: 'consent.scope.profile',
  orgs: 'consent.scope.orgs',
  groups: 'consent.scope.groups',
  offline_access: 'consent.scope.offline_access',
};

/**
 * The CSP source that admits exactly the logo: its origin and path (CSP matches paths exactly),
 * or only its origin when the path holds a character a source list cannot carry.
 */
export function logoSource(logoUri: string): string {
  const url = new URL(logoUri);
  return /^[A-Za-z0-9\-._~!$&()*+=:@/%]*$/.test(url.pathname) ? `${url.origin}${url.pathname}` : url.origin;
}

function clientLinks(view: OneTapView, ui: PageUi) {
  const tags = {
    policy: (c: string) =>
      html`<a href="${view.policyUri}" rel="noopener noreferrer" target="_blank" data-field="policy_uri">${raw(c)}</a>`
        .value,
    tos: (c: string) =>
      html`<a href="${view.tosUri}" rel="noopener noreferrer" target="_blank" data-field="tos_uri">${raw(c)}</a>`.value,
  };
  const key = view.policyUri
    ? view.tosUri
      ? 'consent.read_both'
      : 'consent.read_policy'
    : view.tosUri
      ? 'consent.read_tos'
      : undefined;
  if (!key) return '';
  return html`<p class="muted">${raw(ui.rich(key, tags, { client: view.clientName }))}</p>
`;
}

/**
 * The one-tap approval page (docs/oidc.md, "The authorization endpoint"), the same for every
 * protocol the consent gate guards (docs/security.md "One consent gate"): it names the party and
 * what it receives, and is a plain form whose hidden inputs carry the request.
 */
export function sendOneTap(request: FastifyRequest, reply: FastifyReply, view: OneTapView): FastifyReply {
  reply.code(200).type('text/html; charset=utf-8');
  // The approval answers with a redirect to the client, which CSP form-action must allow; the
  // registered logo is the one image from elsewhere the page may load.
  reply.header(
    'content-security-policy',
    contentSecurityPolicy(request.kp.cspNonce, {
      formAction: view.formAction,
      ...(view.logoUri ? { imgSrc: [logoSource(view.logoUri)] } : {}),
    }),
  );
  const ui = uiOf(request);
  const scopeText = (scope: string): string | SafeHtml => {
    const key = SCOPE_TEXT[scope];
    if (key) return ui.t(key);
    const api = view.apiScopes?.find((s) => s.name === scope);
    if (!api || api.description === null) return scope;
    const words = describeScope(api.description, ui.locale);
    const org = api.orgId !== null ? view.apiOrgNames?.[api.orgId] : undefined;
    return html`<span data-scope="${scope}">${words}</span>${org !== undefined ? html` <span class="muted" data-field="scope_author">(${ui.t('consent.scope.by_org', { org })})</span>` : ''}`;
  };
  return reply.send(
    page({
      title: ui.t('consent.title', { client: view.clientName }),
      nonce: request.kp.cspNonce,
      ui,
      body: html`${
        view.logoUri
          ? html`<img src="${view.logoUri}" alt="${ui.t('consent.logo_alt', { client: view.clientName })}" width="64" height="64" referrerpolicy="no-referrer" data-field="logo_uri">
`
          : ''
      }<h1>${ui.t('consent.heading', { client: view.clientName })}</h1>
${
  view.unverifiedHost !== undefined
    ? html`<p class="warning" data-field="unverified">${raw(ui.rich('consent.unverified', { strong }, { host: view.unverifiedHost }))}</p>
`
    : ''
}${
        view.selfDeclared
          ? html`<p class="warning" data-field="self-declared">${raw(ui.rich('consent.self_declared', { strong }, { origin: view.clientOrigin }))}</p>
`
          : ''
      }${
        view.registeredBy !== undefined
          ? html`<p class="muted" data-field="registered-by">${
              view.registeredBy === null
                ? ui.t('consent.registered_by_operator')
                : raw(ui.rich('consent.registered_by', { strong }, { owner: view.registeredBy }))
            }</p>
`
          : ''
      }<p>${raw(ui.rich('consent.signed_in_as', { account: strong }, { username: view.username }))} ${raw(ui.rich('consent.asks', { muted }, { origin: view.clientOrigin }))}</p>
<ul data-field="released">${(view.released?.map((part) => releaseLine(ui, part)) ?? view.scopes.map(scopeText)).map((line) => html`<li>${line}</li>`)}</ul>
${
  view.resources.length
    ? html`<p>${ui.t('consent.resources')}</p>
<ul data-field="resources">${view.resources.map((resource) => html`<li><code>${resource}</code></li>`)}</ul>
`
    : ''
}${
        view.userCode
          ? html`<p>${raw(ui.rich('consent.user_code', { strong: (c) => `<strong data-field="user_code">${c}</strong>` }, { code: view.userCode }))}</p>
`
          : ''
      }${clientLinks(view, ui)}<form method="post" action="${view.action ?? '/auth/authorize'}" data-action="continue">
${Object.entries(view.hidden).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`)}<button type="submit" name="decision" value="allow">${ui.t('consent.continue')}</button>
<button type="submit" name="decision" value="deny" class="secondary">${ui.t('consent.cancel')}</button>
</form>
${view.userCode ? '' : html`<p class="muted">${ui.t('consent.remembered')}</p>`}`,
    }),
  );
}

/**
 * The client's `access.orgs` refused the account (docs/orgs.md#who-may-sign-in-to-an-app): the
 * person learns why before the client hears `access_denied`, through a same-origin form (every
 * response mode, popup and form_post too, is answered by the approval endpoint).
 */
export function sendNotAdmitted(request: FastifyRequest, reply: FastifyReply, view: NotAdmittedView): FastifyReply {
  reply.code(403).type('text/html; charset=utf-8');
  reply.header('content-security-policy', contentSecurityPolicy(request.kp.cspNonce, { formAction: view.formAction }));
  const ui = uiOf(request);
  return reply.send(
    page({
      title: ui.t('not_admitted.title', { client: view.clientName }),
      nonce: request.kp.cspNonce,
      ui,
      body: html`<h1>${ui.t('not_admitted.title', { client: view.clientName })}</h1>
<p>${raw(ui.rich('consent.signed_in_as', { account: (c) => `<strong data-field="account">${c}</strong>` }, { username: view.username }))} ${raw(ui.rich('not_admitted.admits', { muted }, { origin: view.clientOrigin }))}</p>
<ul data-field="admits">${view.admits.map((part) => html`<li>${accessRuleLine(ui, part)}</li>`)}</ul>
<p>${ui.t('not_admitted.ask')}</p>${
        view.hidden
          ? html`
<form method="post" action="${view.action ?? '/auth/authorize'}" data-action="not-admitted">
${Object.entries(view.hidden).map(
  ([name, value]) => html`<input type="hidden" name="${name}" value="${value}">
`,
)}<button type="submit" name="decision" value="not_admitted">${ui.t('not_admitted.back', { client: view.clientName })}</button>
</form>`
          : ''
      }`,
    }),
  );
}

/** RP-initiated logout without a usable id_token_hint: the user confirms with a same-origin POST. */
export function sendLogoutConfirm(
  request: FastifyRequest,
  reply: FastifyReply,
  hidden: Record<string, string>,
): FastifyReply {
  reply.code(200).type('text/html; charset=utf-8');
  const ui = uiOf(request);
  return reply.send(
    page({
      title: ui.t('logout.title'),
      nonce: request.kp.cspNonce,
      ui,
      body: html`<h1>${ui.t('logout.heading')}</h1>
<form method="post" action="/auth/logout" data-action="logout">
${Object.entries(hidden).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`)}<button type="submit">${ui.t('logout.button')}</button>
</form>`,
    }),
  );
}

/** The signed-out page; `next` is a link back to the app (never an automatic redirect). */
/** Served at FRONTCHANNEL_LOGOUT_SCRIPT: continues to the app once every logout iframe has loaded. */
export const FRONTCHANNEL_LOGOUT_SCRIPT = '/auth/logout/frontchannel.js';

export const FRONTCHANNEL_LOGOUT_JS = `// OIDC Front-Channel Logout 1.0 §4: the apps' logout pages load in the iframes of this page;
// once each has loaded (or after a few seconds, so one slow app cannot hold the person here) the
// browser continues to the app that asked for the logout, when that app was proved.
const next = document.querySelector('[data-action="return"][data-auto]');
const frames = [...document.querySelectorAll('iframe[data-frontchannel]')];
let waiting = frames.length;
const go = () => { if (next) window.location.assign(next.href); };
for (const frame of frames) frame.addEventListener('load', () => { waiting -= 1; if (waiting === 0) go(); }, { once: true });
setTimeout(go, 5000);
`;

export interface SignedOutView {
  /** Where the person may go next: the app's post_logout_redirect_uri. */
  next?: { href: string; label: string; auto: boolean };
  /** Front-channel logout URLs of the apps that got tokens in the ended session, loaded in iframes. */
  frontchannel?: string[];
}

export function sendSignedOut(request: FastifyRequest, reply: FastifyReply, view: SignedOutView = {}): FastifyReply {
  reply.code(200).type('text/html; charset=utf-8');
  const { next } = view;
  const ui = uiOf(request);
  const frontchannel = view.frontchannel ?? [];
  if (frontchannel.length > 0)
    reply.header(
      'content-security-policy',
      contentSecurityPolicy(request.kp.cspNonce, {
        frameSrc: [...new Set(frontchannel.map((uri) => new URL(uri).origin))],
      }),
    );
  const back = next
    ? html`<p><a href="${next.href}" data-action="return"${next.auto ? ' data-auto' : ''} rel="noreferrer">${ui.t('signed_out.return', { label: next.label })}</a></p>`
    : '';
  const frames = frontchannel.length
    ? html`<p class="muted">${ui.t('signed_out.apps')}</p>
${frontchannel.map(
  (
    uri,
  ) => html`<iframe src="${uri}" data-frontchannel title="${ui.t('signed_out.frame_title')}" width="0" height="0" hidden></iframe>
`,
)}`
    : '';
  return reply.send(
    page({
      title: ui.t('signed_out.title'),
      nonce: request.kp.cspNonce,
      ui,
      ...(frontchannel.length ? { scripts: [FRONTCHANNEL_LOGOUT_SCRIPT] } : {}),
      body: html`<h1>${ui.t('signed_out.heading')}</h1>${frames}${back}<p><a href="/auth">${ui.t('signed_out.again')}</a></p>`,
    }),
  );
}

/**
 * The form_post response (OAuth 2.0 Form Post Response Mode §2): a form to the registered redirect
 * URI whose hidden inputs carry the response, submitted by a nonce'd script; without JavaScript
 * the person presses the button. CSP form-action admits that origin only.
 */
export function sendFormPost(
  request: FastifyRequest,
  reply: FastifyReply,
  redirectUri: string,
  response: Record<string, string>,
): FastifyReply {
  reply.code(200).type('text/html; charset=utf-8');
  reply.header(
    'content-security-policy',
    contentSecurityPolicy(request.kp.cspNonce, { formAction: [new URL(redirectUri).origin] }),
  );
  const ui = uiOf(request);
  return reply.send(
    page({
      title: ui.t('returning.title'),
      nonce: request.kp.cspNonce,
      ui,
      scripts: [FORM_POST_SCRIPT],
      body: html`<h1>${ui.t('returning.heading')}</h1>
<form id="kp-form-post" method="post" action="${redirectUri}" data-action="form-post">
${Object.entries(response).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`)}<noscript><p>${ui.t('returning.noscript')}</p><button type="submit">${ui.t('returning.button')}</button></noscript>
</form>`,
    }),
  );
}

/**
 * `prompt=select_account` (OIDC Core §3.1.2.1): this browser holds one session, so the choice is
 * to continue with it or to sign in to another account (which replaces it). Plain links: each
 * resumes a copy of the request parked for that answer, and neither changes anything by itself.
 */
export function sendAccountChoice(request: FastifyRequest, reply: FastifyReply, view: AccountChoiceView): FastifyReply {
  reply.code(200).type('text/html; charset=utf-8');
  const ui = uiOf(request);
  return reply.send(
    page({
      title: ui.t('choose.title', { client: view.clientName }),
      nonce: request.kp.cspNonce,
      ui,
      body: html`<h1>${ui.t('choose.title', { client: view.clientName })}</h1>
<p>${raw(ui.rich('consent.signed_in_as', { account: strong }, { username: view.username }))}</p>
<p><a href="${view.continueHref}" data-action="continue-as">${ui.t('choose.continue_as', { username: view.username })}</a></p>
<p><a href="${view.anotherHref}" data-action="use-another-account">${ui.t('choose.another')}</a></p>
<p class="muted">${ui.t('choose.warning', { username: view.username })}</p>`,
    }),
  );
}
