import type { FastifyInstance } from 'fastify';
import { claimsOf, fleetOf } from '../../agents/fleet.js';
import { liveGrantsOf } from '../../agents/grants.js';
import { ownedAgent } from '../../agents/lifecycle.js';
import type { MessageKey } from '#lib/i18n/translate.js';
import { escapeHtml, html, page, raw } from '../../pages/layout.js';
import { type PageUi, uiOf } from '../../pages/ui.js';
import { requireSession } from '../../plugins/session.js';
import { errorResponses } from '../../http/schemas.js';

/** A moment in the reader's locale (UTC), or "never". */
// English keeps the unambiguous ISO form, as the account page.
const when = (ui: PageUi, ms: number | null): string =>
  ms === null
    ? ui.t('agents.never')
    : `${ui.locale === 'en' ? new Date(ms).toISOString().replace('T', ' ').slice(0, 16) : ui.dateTime(ms)} UTC`;

const STATES: Record<string, MessageKey | undefined> = {
  active: 'agents.state.active',
  suspended: 'agents.state.suspended',
  compromised: 'agents.state.compromised',
  revoked: 'agents.state.revoked',
};

const ACTIONS: Record<string, MessageKey | undefined> = {
  suspend: 'agents.action.suspend',
  resume: 'agents.action.resume',
  mark_compromised: 'agents.action.mark_compromised',
  revoke: 'agents.action.revoke',
};

const label = (ui: PageUi, keys: Record<string, MessageKey | undefined>, value: string): string => {
  const key = keys[value];
  return key ? ui.t(key) : value.replace('_', ' ');
};

/** The owner's agent pages (docs/agents.md): the fleet with the approval form, and one agent's profile. */
export default async function agentPages(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  app.addHook('onRequest', requireSession);

  app.get(
    '/account/agents',
    {
      schema: {
        tags: ['agents'],
        summary:
          'HTML agent fleet: state, last proof, evidence freshness, pending enrollments and the owner-code field',
        security: [{ sessionCookie: [] }],
        querystring: { type: 'object', properties: { enrollment: { type: 'string', maxLength: 80 } } },
        response: errorResponses,
      },
    },
    async (request, reply) => {
      const session = request.kp.session!;
      const ui = uiOf(request);
      const { t } = ui;
      const { agents, pending } = await fleetOf(services, session.identityId);
      const rows = agents.map(({ agent, claims }) => {
        const fresh = Object.values(claims).filter((c) => c.status === 'verified').length;
        return html`<tr data-agent="${agent.agentId}"><td><a href="/account/agents/${agent.agentId}">${agent.name}</a></td><td data-state="${agent.state}">${label(ui, STATES, agent.state)}</td><td>${when(ui, agent.lastProofAt)}</td><td>${t('agents.claims_verified', { fresh, total: 4 })}</td></tr>`;
      });
      const prefill = (request.query as { enrollment?: string }).enrollment ?? '';
      reply.type('text/html; charset=utf-8');
      return page({
        title: t('agents.title'),
        nonce: request.kp.cspNonce,
        ui,
        scripts: ['/assets/agents.js'],
        body: html`<h1>${t('agents.heading')}</h1>
<p id="status" role="status"></p>
<h2>${t('agents.approve.heading')}</h2>
<p>${t('agents.approve.intro')}</p>
<form id="approve" data-msg-done="${t('agents.approve.done')}">
<label>${t('agents.approve.enrollment')} <input name="enrollment_id" required value="${prefill}" autocomplete="off"></label>
<label>${t('agents.approve.owner_code')} <input name="owner_code" required placeholder="XXXX-XXXX" autocomplete="off" inputmode="text"></label>
<button type="submit" data-action="approve">${t('agents.approve.button')}</button>
</form>
${pending.length ? html`<h2>${t('agents.pending.heading')}</h2><ul>${pending.map((e) => html`<li>${t('agents.pending.item', { name: e.name, id: e.enrollmentId, until: when(ui, e.expiresAt) })}</li>`)}</ul>` : ''}
<h2>${t('agents.fleet.heading')}</h2>
${agents.length ? html`<table><thead><tr><th>${t('agents.fleet.agent')}</th><th>${t('agents.fleet.state')}</th><th>${t('agents.fleet.last_proof')}</th><th>${t('agents.fleet.evidence')}</th></tr></thead><tbody>${rows}</tbody></table>` : html`<p>${t('agents.fleet.none')}</p>`}`,
      });
    },
  );

  app.get(
    '/account/agents/:agentId',
    {
      schema: {
        tags: ['agents'],
        summary: 'HTML agent profile; unknown and foreign ids are the same 404',
        security: [{ sessionCookie: [] }],
        params: { type: 'object', required: ['agentId'], properties: { agentId: { type: 'string', maxLength: 80 } } },
        response: errorResponses,
      },
    },
    async (request, reply) => {
      const session = request.kp.session!;
      const ui = uiOf(request);
      const { t } = ui;
      const agent = await ownedAgent(services, session.identityId, (request.params as { agentId: string }).agentId);
      const claims = await claimsOf(services, agent);
      const grants = await liveGrantsOf(services, agent.agentId);
      const here = `/account/agents/${agent.agentId}`;
      const actions = {
        active: ['suspend', 'mark_compromised', 'revoke'],
        suspended: ['resume', 'mark_compromised', 'revoke'],
        compromised: ['revoke'],
        revoked: [],
      }[agent.state];
      reply.type('text/html; charset=utf-8');
      return page({
        title: agent.name,
        nonce: request.kp.cspNonce,
        ui,
        scripts: ['/assets/agents.js'],
        body: html`<h1>${agent.name}</h1>
<p id="status" role="status"></p>
<p>${agent.subjectKind.replace('_', ' ')} · <strong data-state="${agent.state}">${label(ui, STATES, agent.state)}</strong> · ${t('agents.profile.visibility', { visibility: agent.visibility })}</p>
<p>${raw(ui.rich('agents.profile.ids', { code: (c) => `<code>${c}</code>` }, { id: agent.agentId, jkt: agent.jkt, last: when(ui, agent.lastProofAt) }))}</p>
<table><tbody>${Object.entries(claims).map(([name, c]) => html`<tr><th>${name.replace('_', ' ')}</th><td>${c.status}</td><td>${c.expires_at ?? ''}</td></tr>`)}</tbody></table>
${agent.visibility === 'private' ? html`<p>${t('agents.profile.proof_private')}</p>` : html`<p><a href="/agent/${agent.proofId}">${t('agents.profile.proof_link')}</a></p>`}
<p>${actions.map((action) => html`<button type="button" data-agent-action="${action}" data-agent-id="${agent.agentId}" data-msg-done="${t('agents.action_done')}">${label(ui, ACTIONS, action)}</button> `)}</p>
<h2>${t('agents.grants.heading')}</h2>
<p>${t('agents.grants.intro')}</p>
${grants.length ? html`<table data-grants><thead><tr><th>${t('agents.grants.client')}</th><th>${t('agents.grants.scope')}</th><th>${t('agents.grants.resource')}</th><th>${t('agents.grants.since')}</th><th></th></tr></thead><tbody>${grants.map((g) => html`<tr data-grant="${g.grantId}"><td><code>${g.clientId}</code></td><td>${g.scope}</td><td>${g.resource ?? ''}</td><td>${when(ui, g.createdAt)}</td><td><button type="button" data-revoke-grant="${g.grantId}" data-msg-done="${t('agents.grants.revoked')}">${t('agents.grants.revoke')}</button></td></tr>`)}</tbody></table>` : html`<p>${t('agents.grants.none')}</p>`}
${
  agent.state === 'active'
    ? html`<form id="grant" data-agent-id="${agent.agentId}" data-msg-done="${t('agents.grants.approved')}">
<label>${t('agents.grants.client_id')} <input name="client_id" required autocomplete="off"></label>
<label>${t('agents.grants.scope')} <input name="scope" required autocomplete="off" placeholder="notes:read"></label>
<label>${t('agents.grants.resource_optional')} <input name="resource" autocomplete="off" placeholder="https://api.example.com"></label>
<button type="submit" data-action="grant">${t('agents.grants.approve')}</button>
</form>
${session.assurance === 'sensitive' ? '' : html`<p>${raw(ui.rich('agents.grants.step_up', { link: (c) => `<a href="/auth/step-up?return=${escapeHtml(here)}">${c}</a>` }))}</p>`}`
    : ''
}`,
      });
    },
  );
}
