import { accessRuleParts, routeAccessParts } from '#lib/access/evaluate-access.js';
import { accessRuleText } from '../../pages/access-rules.js';
import { html, type SafeHtml } from '../../pages/layout.js';
import type { PageUi } from '../../pages/ui.js';
import type { StoredClient } from '../../storage/interface.js';

/**
 * Who may get in, in words (docs/gateway.md#access-rules, docs/orgs.md#who-may-sign-in-to-an-app).
 * The admin API and the CLI say the same in English (`describeRouteAccess`).
 */
export function accessRules(ui: PageUi, client: StoredClient): SafeHtml {
  const orgs = client.metadata.access.orgs;
  const signIn = orgs
    ? html`<p data-field="sign-in-rules">${ui.t('apps.sign_in_rules', { rules: accessRuleText(ui, accessRuleParts({ orgs })) })}</p>`
    : html``;
  const routes = client.metadata.gateway?.routes ?? [];
  if (routes.length === 0) return signIn;
  return html`${signIn}<ul data-field="route-rules">${routes.map(
    (route) => html`<li><code>${route.path}</code>: ${accessRuleText(ui, routeAccessParts(route))}</li>`,
  )}</ul>`;
}
