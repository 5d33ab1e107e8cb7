import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import type { Translator } from '#lib/i18n/translate.js';
import { escapeHtml } from '#lib/html/escape-html.js';
import { cookieName, clearCookie, SIGNED_OUT_COOKIE } from '#lib/gateway-protocol/session-cookie.js';
import type { DeniedPage } from './authorize.js';
import type { GatewayContext } from './context.js';
import { gatewayUi, languageSwitcher } from './locale.js';

/** The gateway's own pages (docs/gateway.md#refusals): server-rendered, no script, a style allowed by its hash. */

export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
};

/**
 * 403 for a browser that no access rule admits (docs/gateway.md#access-rules): it names the
 * account and the app, and offers another account through the control plane's account choice
 * (`prompt=select_account`), never a redirect back into sign-in, which would loop.
 */
export function deniedPage(
  ctx: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  denied: Pick<DeniedPage, 'returnTo'> & { account?: string },
): void {
  const app = new URL(ctx.publicUrl).host;
  const ui = gatewayUi(ctx, req);
  const another = `/_gate/signin?${new URLSearchParams({ rd: denied.returnTo, prompt: 'select_account' })}`;
  const title = escapeHtml(ui.t('gateway.denied.title', { app }));
  const where = (c: string) => `<strong data-field="app">${c}</strong>`;
  // Refused at the control plane, the gateway never learnt who signed in: the page names the app only.
  const explained =
    denied.account === undefined
      ? ui.rich('gateway.denied.body_unnamed', { where }, { app })
      : ui.rich(
          'gateway.denied.body',
          { who: (c) => `<strong data-field="account">${c}</strong>`, where },
          { account: denied.account, app },
        );
  const html = `${pageStart(ui, title)}
<body><main><h1>${title}</h1>
<p>${explained}</p>
<p><a href="${escapeHtml(another)}" data-action="use-another-account">${escapeHtml(ui.t('gateway.denied.another'))}</a></p></main>
${languageSwitcher(ui, denied.returnTo)}</body></html>`;
  res.writeHead(403, {
    ...PAGE_HEADERS,
    'content-language': ui.locale,
    'content-security-policy': `default-src 'none'; style-src ${PAGE_STYLE_HASH}; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`,
  });
  res.end(html);
}

/** After a sign-out: the person is told they are signed out, with a link to sign in again; the marker is spent. */
export function signedOutPage(ctx: GatewayContext, req: IncomingMessage, res: ServerResponse, returnTo: string): void {
  const ui = gatewayUi(ctx, req);
  const again = `/_gate/signin?${new URLSearchParams({ rd: returnTo })}`;
  const title = escapeHtml(ui.t('gateway.signed_out.title'));
  const html = `${pageStart(ui, title)}
<body><main><h1>${title}</h1>
<p role="status">${escapeHtml(ui.t('gateway.signed_out.body', { app: new URL(ctx.publicUrl).host }))}</p>
<p><a href="${escapeHtml(again)}" data-action="sign-in-again">${escapeHtml(ui.t('gateway.signed_out.again'))}</a></p></main>
${languageSwitcher(ui, returnTo)}</body></html>`;
  res.writeHead(200, {
    ...PAGE_HEADERS,
    'content-language': ui.locale,
    'set-cookie': [clearCookie(cookieName(SIGNED_OUT_COOKIE, ctx.secure), ctx.secure)],
    'content-security-policy': `default-src 'none'; style-src ${PAGE_STYLE_HASH}; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`,
  });
  res.end(html);
}

// The gateway pages' look: the control plane's system font, spacing and button, inline and
// allowed by its hash alone (the pages load nothing and run no script). Logical properties
// (margin-inline-start) mirror the layout in a right-to-left language.
const PAGE_STYLE = `:root{color-scheme:light dark;--fg:#17202a;--bg:#fbfbfd;--muted:#5b6670;--accent:#0b57d0}
@media (prefers-color-scheme:dark){:root{--fg:#e8eaed;--bg:#14171a;--muted:#a3acb5;--accent:#8ab4f8}}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:32rem;margin:0 auto;padding:3rem 1.25rem}h1{font-size:1.6rem;margin:0 0 1rem}p{color:var(--muted)}
button{font:inherit;padding:.6rem 1.1rem;border-radius:.4rem;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer;margin-top:.75rem}
a{color:var(--accent)}form a{margin-inline-start:1rem}:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
nav.lang{max-width:32rem;margin:0 auto;padding:0 1.25rem 2rem;font-size:.9rem}nav.lang ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:.25rem 1rem}`;
export const PAGE_STYLE_HASH = `'sha256-${createHash('sha256').update(PAGE_STYLE).digest('base64')}'`;

/** `<html lang dir>` and `<head>` of a gateway page; `title` is already escaped. */
export function pageStart(ui: Translator, title: string): string {
  return `<!doctype html><html lang="${ui.locale}" dir="${ui.dir}"><head><meta charset="utf-8"><title>${title}</title><meta name="viewport" content="width=device-width, initial-scale=1"><style>${PAGE_STYLE}</style></head>`;
}
