import { describeAllowRules, describeRouteAccess } from '#lib/access/evaluate-access.js';
import { html, type SafeHtml } from '../../pages/layout.js';
import type { StoredClient } from '../../storage/types.js';

/** Who may get in, in words (docs/gateway.md#access-rules, docs/orgs.md#who-may-sign-in-to-an-app). */
export function accessRules(client: StoredClient): SafeHtml {
  const orgs = client.metadata.access.orgs;
  const signIn = orgs
    ? html`<p data-field="sign-in-rules">Sign-in: only ${describeAllowRules({ orgs }).join('; ')}.</p>`
    : html``;
  const routes = client.metadata.gateway?.routes ?? [];
  if (routes.length === 0) return signIn;
  return html`${signIn}<ul data-field="route-rules">${routes.map(
    (route) => html`<li><code>${route.path}</code>: ${describeRouteAccess(route).join('; ')}</li>`,
  )}</ul>`;
}
