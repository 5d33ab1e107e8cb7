import type { FastifyInstance } from 'fastify';
import { claimsOf, fleetOf } from '../../agents/fleet.js';
import { liveGrantsOf } from '../../agents/grants.js';
import { ownedAgent } from '../../agents/lifecycle.js';
import { html, page } from '../../pages/layout.js';
import { requireSession } from '../../plugins/session.js';
import { errorResponses } from '../../http/schemas.js';

const when = (ms: number | null): string =>
  ms === null ? 'never' : new Date(ms).toISOString().replace('T', ' ').slice(0, 16) + ' UTC';

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
      const { agents, pending } = await fleetOf(services, session.identityId);
      const rows = agents.map(({ agent, claims }) => {
        const fresh = Object.values(claims).filter((c) => c.status === 'verified').length;
        return html`<tr data-agent="${agent.agentId}"><td><a href="/account/agents/${agent.agentId}">${agent.name}</a></td><td data-state="${agent.state}">${agent.state}</td><td>${when(agent.lastProofAt)}</td><td>${fresh} of 4 claims verified</td></tr>`;
      });
      const prefill = (request.query as { enrollment?: string }).enrollment ?? '';
      reply.type('text/html; charset=utf-8');
      return page({
        title: 'Your agents',
        nonce: request.kp.cspNonce,
        scripts: ['/assets/agents.js'],
        body: html`<h1>Your agents</h1>
<p id="status" role="status"></p>
<h2>Approve an agent</h2>
<p>An agent that asks to be yours shows an enrollment id and an owner code. Type them here to take responsibility for it.</p>
<form id="approve">
<label>Enrollment id <input name="enrollment_id" required value="${prefill}" autocomplete="off"></label>
<label>Owner code <input name="owner_code" required placeholder="XXXX-XXXX" autocomplete="off" inputmode="text"></label>
<button type="submit" data-action="approve">Approve</button>
</form>
${pending.length ? html`<h2>Approved, waiting for the agent</h2><ul>${pending.map((e) => html`<li>${e.name} (${e.enrollmentId}), until ${when(e.expiresAt)}</li>`)}</ul>` : ''}
<h2>Fleet</h2>
${agents.length ? html`<table><thead><tr><th>Agent</th><th>State</th><th>Last proof</th><th>Evidence</th></tr></thead><tbody>${rows}</tbody></table>` : html`<p>No agents yet.</p>`}`,
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
        scripts: ['/assets/agents.js'],
        body: html`<h1>${agent.name}</h1>
<p id="status" role="status"></p>
<p>${agent.subjectKind.replace('_', ' ')} · <strong data-state="${agent.state}">${agent.state}</strong> · visibility ${agent.visibility}</p>
<p>Agent id <code>${agent.agentId}</code>, key thumbprint <code>${agent.jkt}</code>, last proof ${when(agent.lastProofAt)}</p>
<table><tbody>${Object.entries(claims).map(([name, c]) => html`<tr><th>${name.replace('_', ' ')}</th><td>${c.status}</td><td>${c.expires_at ?? ''}</td></tr>`)}</tbody></table>
${agent.visibility === 'private' ? html`<p>The Proof Link is private.</p>` : html`<p><a href="/agent/${agent.proofId}">Proof Link</a></p>`}
<p>${actions.map((action) => html`<button type="button" data-agent-action="${action}" data-agent-id="${agent.agentId}">${action.replace('_', ' ')}</button> `)}</p>
<h2>Grants</h2>
<p>A grant lets this agent get tokens from one app (a client registered for agents) with a scope you choose; it ends when you revoke it or the agent leaves active.</p>
${grants.length ? html`<table data-grants><thead><tr><th>App (client)</th><th>Scope</th><th>Resource</th><th>Since</th><th></th></tr></thead><tbody>${grants.map((g) => html`<tr data-grant="${g.grantId}"><td><code>${g.clientId}</code></td><td>${g.scope}</td><td>${g.resource ?? ''}</td><td>${when(g.createdAt)}</td><td><button type="button" data-revoke-grant="${g.grantId}">Revoke</button></td></tr>`)}</tbody></table>` : html`<p>No grants yet.</p>`}
${
  agent.state === 'active'
    ? html`<form id="grant" data-agent-id="${agent.agentId}">
<label>Client id <input name="client_id" required autocomplete="off"></label>
<label>Scope <input name="scope" required autocomplete="off" placeholder="notes:read"></label>
<label>Resource (optional) <input name="resource" autocomplete="off" placeholder="https://api.example.com"></label>
<button type="submit" data-action="grant">Approve grant</button>
</form>
${session.assurance === 'sensitive' ? '' : html`<p>Approving a grant needs a recent passkey check: first <a href="/auth/step-up?return=${here}">confirm it is you</a>.</p>`}`
    : ''
}`,
      });
    },
  );
}
