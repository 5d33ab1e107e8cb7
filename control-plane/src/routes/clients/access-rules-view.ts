import { describeAllowRules, describeRouteAccess } from '#lib/access/evaluate-access.js';
import { html, raw, type SafeHtml } from '../../pages/layout.js';
import type { PageUi } from '../../pages/ui.js';
import type { StoredClient } from '../../storage/types.js';

/**
 * Who may get in, in words (docs/gateway.md#access-rules, docs/orgs.md#who-may-sign-in-to-an-app).
 * The rules themselves keep the one English phrasing the admin API and the CLI share (`lang="en"`).
 */
export function accessRules(ui: PageUi, client: StoredClient): SafeHtml {
  const orgs = client.metadata.access.orgs;
  const signIn = orgs
    ? html`<p data-field="sign-in-rules">${raw(ui.rich('apps.sign_in_rules', { en: (inner) => `<span lang="en">${inner}</span>` }, { rules: describeAllowRules({ orgs }).join('; ') }))}</p>`
    : html``;
  const routes = client.metadata.gateway?.routes ?? [];
  if (routes.length === 0) return signIn;
  return html`${signIn}<ul data-field="route-rules">${routes.map(
    (route) =>
      html`<li><code>${route.path}</code>: <span lang="en">${describeRouteAccess(route).join('; ')}</span></li>`,
  )}</ul>`;
}
