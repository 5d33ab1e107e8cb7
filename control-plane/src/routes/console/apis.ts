import type { FastifyInstance } from 'fastify';
import { html } from '../../pages/layout.js';
import { listApis } from '../../console/views.js';
import { type ConsoleKit } from './kit.js';

/** APIs and their scopes. */
export function apisSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, render, get } = c;
  get('/console/apis', 'Declared APIs and their scopes', async (request, reply) => {
    const u = ui(request);
    const apis = await listApis(kp);
    const body =
      apis.length === 0
        ? html`<p>${u.t('console.apis.none')}</p>`
        : html`<table><thead><tr><th scope="col">${u.t('console.col.name')}</th><th scope="col">${u.t('console.apis.resource')}</th><th scope="col">${u.t('console.apis.scopes')}</th></tr></thead>
<tbody>${apis.map((a) => html`<tr><td>${a.name}</td><td><code>${a.resource}</code></td><td>${a.scopes.map((s) => html`<code>${s.name}</code> `)}</td></tr>`)}</tbody></table>`;
    return render(request, reply, u.t('console.nav.apis'), body);
  });
}
