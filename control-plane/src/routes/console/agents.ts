import type { FastifyInstance, FastifyRequest } from 'fastify';
import { html } from '../../pages/layout.js';
import { actionButton, age, doneNotice, nextLink } from '../../pages/console-views.js';
import { listAgentsPage } from '../../console/views.js';
import { revokeAgentGrantAsOperator } from '../../agents/grants.js';
import { type ConsoleKit } from './kit.js';

/**
 * Agents: every agent a page at a time with its owner and the grants that stand; an operator
 * revokes a grant (at `sensitive`) through the operation its owner's page uses, the receipt
 * naming the operator.
 */
export function agentsSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, render, operator, change, get, post } = c;

  async function agentsPage(request: FastifyRequest, notice?: ReturnType<typeof doneNotice>) {
    const u = ui(request);
    const after = (request.query as { after?: unknown }).after;
    const { agents, next } = await listAgentsPage(kp, typeof after === 'string' ? after.slice(0, 100) : null);
    const now = kp.now();
    const canChange = operator(request);
    if (agents.length === 0) return html`${notice ?? ''}<p>${u.t('console.agents.none')}</p>`;
    return html`${notice ?? ''}<table><thead><tr><th scope="col">${u.t('console.col.name')}</th><th scope="col">${u.t('console.agents.id')}</th><th scope="col">${u.t('console.col.owner')}</th><th scope="col">${u.t('console.col.state')}</th><th scope="col">${u.t('console.agents.grants')}</th></tr></thead>
<tbody>${agents.map(
      ({ agent, owner, grants }) =>
        html`<tr data-agent="${agent.agentId}"><td>${agent.name}</td><td><code>${agent.agentId}</code></td><td><a href="/console/accounts/${agent.ownerId}">${owner}</a></td><td>${agent.state}</td><td>${
          grants.length === 0
            ? u.t('console.agents.grants_none')
            : html`<ul>${grants.map(
                (g) =>
                  html`<li data-grant="${g.grantId}"><code>${g.clientId}</code> ${g.scope} (${age(u, g.createdAt, now)})${
                    canChange
                      ? actionButton(
                          `/console/agents/grants/${g.grantId}/revoke`,
                          u.t('console.agents.revoke', { client: g.clientId }),
                          { danger: true },
                        )
                      : ''
                  }</li>`,
              )}</ul>`
        }</td></tr>`,
    )}</tbody></table>
${nextLink(u, '/console/agents', {}, next)}`;
  }

  get(
    '/console/agents',
    'Agents a page at a time, with their owners and the grants that stand',
    async (request, reply) => render(request, reply, ui(request).t('console.nav.agents'), await agentsPage(request)),
  );

  post(
    '/console/agents/grants/:grantId/revoke',
    "Revoke an agent's grant; the tokens issued under it stop working (operator, sensitive)",
    (request, reply) =>
      change(request, reply, '/console/agents', async (actor) => {
        const u = ui(request);
        const grantId = (request.params as { grantId: string }).grantId.slice(0, 100);
        const { receipt } = await revokeAgentGrantAsOperator(kp, grantId, actor);
        return render(
          request,
          reply,
          u.t('console.nav.agents'),
          await agentsPage(request, doneNotice(u, u.t('console.agents.revoked'), receipt)),
        );
      }),
  );
}
