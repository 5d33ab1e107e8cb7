import type { FastifyInstance, FastifyRequest } from 'fastify';
import { html, type SafeHtml } from '../../pages/layout.js';
import { actionButton, age, doneNotice } from '../../pages/console-views.js';
import { gatewayEnforcement } from '../../managed-gateways/issue-config.js';
import { consoleOverview, listGatewayClients, rotateSigningKey } from '../../console/views.js';
import type { StoredClient } from '../../storage/interface.js';
import { type ConsoleKit } from './kit.js';

/** Overview and gateways: health, signing keys (rotate), the last checkpoint, every gateway's status. */
export function overviewSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, render, operator, change, get, post } = c;
  get('/console', 'Overview: health, signing keys, the last checkpoint, gateways, warnings', async (request, reply) => {
    const u = ui(request);
    const now = kp.now();
    const { ready, keys, checkpoint, gateways, warnings: warn } = await consoleOverview(kp);
    const warnings = [
      ...(warn.noFounder ? [u.t('console.warn.no_founder')] : []),
      ...(warn.devMasterKey ? [u.t('console.warn.dev_master_key')] : []),
      ...(warn.mailToFiles ? [u.t('console.warn.mail_files')] : []),
    ];
    const body = html`<h2>${u.t('console.health')}</h2>
<p data-field="health">${u.t(ready ? 'console.health.ready' : 'console.health.not_ready')}</p>
${warnings.length ? html`<h2>${u.t('console.warnings')}</h2><ul>${warnings.map((w) => html`<li>${w}</li>`)}</ul>` : ''}
<h2 id="keys-heading">${u.t('console.keys')}</h2>
<table aria-labelledby="keys-heading"><thead><tr><th scope="col">kid</th><th scope="col">${u.t('console.col.state')}</th><th scope="col">${u.t('console.col.created')}</th></tr></thead>
<tbody>${keys.map((k) => html`<tr><td><code>${k.kid}</code></td><td>${k.state}</td><td>${age(u, k.createdAt, now)}</td></tr>`)}</tbody></table>
${operator(request) ? actionButton('/console/keys/rotate', u.t('console.keys.rotate')) : ''}
<h2>${u.t('console.checkpoint')}</h2>
${
  checkpoint
    ? html`<p data-field="checkpoint">${u.t('console.checkpoint.epoch', { epoch: checkpoint.epoch, size: checkpoint.size })} <code>${checkpoint.root}</code>, ${age(u, checkpoint.sealedAt, now)}</p>`
    : html`<p>${u.t('console.checkpoint.none')}</p>`
}
<h2>${u.t('console.nav.gateways')}</h2>
${await gatewayTable(request, gateways)}`;
    return render(request, reply, u.t('console.nav.overview'), body);
  });

  post('/console/keys/rotate', 'Rotate the signing key (operator, sensitive)', (request, reply) =>
    change(request, reply, '/console', async (actor) => {
      const { receipt } = await rotateSigningKey(kp, actor);
      return render(
        request,
        reply,
        ui(request).t('console.keys'),
        doneNotice(ui(request), ui(request).t('console.keys.rotated'), receipt),
      );
    }),
  );

  async function gatewayTable(request: FastifyRequest, gateways: StoredClient[]): Promise<SafeHtml> {
    const u = ui(request);
    if (gateways.length === 0) return html`<p>${u.t('console.gateways.none')}</p>`;
    const rows = [];
    for (const client of gateways) {
      const status = await gatewayEnforcement(kp, client);
      rows.push(html`<tr><td><a href="/console/clients/${client.clientId}">${client.metadata.client_name ?? client.clientId}</a></td>
<td>${client.metadata.gateway?.mode ?? ''}</td><td>${status.status}</td><td>${age(u, status.observed[0]?.receivedAt, status.now)}</td></tr>`);
    }
    return html`<table><thead><tr><th scope="col">${u.t('console.col.name')}</th><th scope="col">${u.t('console.col.mode')}</th><th scope="col">${u.t('console.col.status')}</th><th scope="col">${u.t('console.col.evidence')}</th></tr></thead><tbody>${rows}</tbody></table>`;
  }

  get('/console/gateways', 'Gateways: mode, enforcement status and the age of their evidence', async (request, reply) =>
    render(
      request,
      reply,
      ui(request).t('console.nav.gateways'),
      await gatewayTable(request, await listGatewayClients(kp)),
    ),
  );
}
