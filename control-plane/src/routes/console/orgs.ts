import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html, type SafeHtml } from '../../pages/layout.js';
import { actionButton, age, doneNotice, nextLink } from '../../pages/console-views.js';
import { deleteConnection } from '../../federation/connections.js';
import { revokeOrgScimToken } from '../../scim/tokens.js';
import { listOrgsPage, orgDetail } from '../../console/views.js';
import type { OrgMailDomain } from '../../storage/interface.js';
import type { PageUi } from '../../pages/ui.js';
import { type ConsoleKit } from './kit.js';

const cursorOf = (request: FastifyRequest) => {
  const after = (request.query as { after?: unknown }).after;
  return typeof after === 'string' ? after.slice(0, 100) : null;
};

function domainState(u: PageUi, domain: OrgMailDomain) {
  if (domain.verifiedAt === null) return u.t('console.orgs.domain_pending');
  return domain.failingSince === null ? u.t('console.orgs.domain_verified') : u.t('console.orgs.domain_failing');
}

/**
 * Organizations: every org a page at a time, one org with its members, teams, mail domains,
 * connections and SCIM tokens. An operator may remove a connection or revoke a SCIM token (the
 * operations the org's own API uses, the receipt naming the operator); the rest an org's owners
 * change on its own pages.
 */
export function orgsSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, render, operator, change, get, post } = c;

  get('/console/orgs', 'Organizations by slug, a page at a time', async (request, reply) => {
    const u = ui(request);
    const { orgs, next } = await listOrgsPage(kp, cursorOf(request));
    const body =
      orgs.length === 0
        ? html`<p>${u.t('console.orgs.none')}</p>`
        : html`<table><thead><tr><th scope="col">${u.t('console.orgs.slug')}</th><th scope="col">${u.t('console.col.name')}</th><th scope="col">${u.t('console.orgs.id')}</th><th scope="col">${u.t('console.col.created')}</th></tr></thead>
<tbody>${orgs.map((o) => html`<tr><td><a href="/console/orgs/${o.slug}">${o.slug}</a></td><td>${o.name}</td><td><code>${o.orgId}</code></td><td>${age(u, o.createdAt, kp.now())}</td></tr>`)}</tbody></table>
${nextLink(u, '/console/orgs', {}, next)}`;
    return render(request, reply, u.t('console.nav.orgs'), body);
  });

  async function orgPage(request: FastifyRequest, reply: FastifyReply, slug: string, notice?: SafeHtml) {
    const u = ui(request);
    const now = kp.now();
    const { org, members, teams, mailDomains, connections, scimTokens } = await orgDetail(kp, slug);
    const base = `/console/orgs/${org.slug}`;
    const body = html`${notice ?? ''}<dl>
<dt>${u.t('console.orgs.slug')}</dt><dd>${org.slug}</dd>
<dt>${u.t('console.orgs.id')}</dt><dd><code>${org.orgId}</code></dd>
<dt>${u.t('console.col.created')}</dt><dd>${age(u, org.createdAt, now)}</dd>
</dl>
<h2 id="members-heading">${u.t('console.orgs.members')}</h2>
<table aria-labelledby="members-heading"><thead><tr><th scope="col">${u.t('console.col.username')}</th><th scope="col">${u.t('console.orgs.role')}</th><th scope="col">${u.t('console.col.created')}</th></tr></thead>
<tbody>${members.map((m) => html`<tr><td><a href="/console/accounts/${m.identityId}">${m.username}</a></td><td>${m.role}</td><td>${age(u, m.addedAt, now)}</td></tr>`)}</tbody></table>
<h2 id="teams-heading">${u.t('console.orgs.teams')}</h2>
${
  teams.length === 0
    ? html`<p>${u.t('console.orgs.teams_none')}</p>`
    : html`<table aria-labelledby="teams-heading"><thead><tr><th scope="col">${u.t('console.orgs.slug')}</th><th scope="col">${u.t('console.col.name')}</th><th scope="col">${u.t('console.orgs.members')}</th></tr></thead>
<tbody>${teams.map((team) => html`<tr><td>${team.slug}</td><td>${team.displayName}</td><td>${team.size}</td></tr>`)}</tbody></table>`
}
<h2 id="domains-heading">${u.t('console.orgs.mail_domains')}</h2>
${
  mailDomains.length === 0
    ? html`<p>${u.t('console.orgs.mail_domains_none')}</p>`
    : html`<table aria-labelledby="domains-heading"><thead><tr><th scope="col">${u.t('console.orgs.domain')}</th><th scope="col">${u.t('console.col.state')}</th><th scope="col">${u.t('console.orgs.checked')}</th></tr></thead>
<tbody>${mailDomains.map((d) => html`<tr><td>${d.domain}</td><td>${domainState(u, d)}</td><td>${age(u, d.checkedAt, now)}</td></tr>`)}</tbody></table>`
}
<h2 id="connections-heading">${u.t('console.orgs.connections')}</h2>
${
  connections.length === 0
    ? html`<p data-field="connections">${u.t('console.orgs.connections_none')}</p>`
    : html`<table aria-labelledby="connections-heading" data-field="connections"><thead><tr><th scope="col">${u.t('console.col.name')}</th><th scope="col">${u.t('console.orgs.type')}</th><th scope="col">${u.t('console.orgs.domains')}</th><th scope="col">${u.t('console.orgs.required')}</th>${operator(request) ? html`<th scope="col">${u.t('console.changes')}</th>` : ''}</tr></thead>
<tbody>${connections.map(
        (c) =>
          html`<tr data-connection="${c.connectionId}"><td>${c.name} <code>${c.connectionId}</code></td><td>${c.type}</td><td>${c.domains.join(' ')}</td><td>${u.t(c.required ? 'console.yes' : 'console.no')}</td>${
            operator(request)
              ? html`<td>${actionButton(`${base}/connections/${c.connectionId}/remove`, u.t('console.orgs.connection_remove', { name: c.name }), { danger: true })}</td>`
              : ''
          }</tr>`,
      )}</tbody></table>`
}
<h2 id="scim-heading">${u.t('console.orgs.scim_tokens')}</h2>
${
  scimTokens.length === 0
    ? html`<p data-field="scim-tokens">${u.t('console.orgs.scim_tokens_none')}</p>`
    : html`<table aria-labelledby="scim-heading" data-field="scim-tokens"><thead><tr><th scope="col">${u.t('console.orgs.token')}</th><th scope="col">${u.t('console.col.created')}</th><th scope="col">${u.t('console.orgs.last_used')}</th><th scope="col">${u.t('console.col.state')}</th></tr></thead>
<tbody>${scimTokens.map(
        (token) =>
          html`<tr data-token="${token.tokenId}"><td><code>${token.tokenId}</code></td><td>${age(u, Date.parse(token.createdAt), now)}</td><td>${age(u, token.lastUsedAt === null ? null : Date.parse(token.lastUsedAt), now)}</td><td>${
            token.revokedAt !== null
              ? u.t('console.orgs.token_revoked_state')
              : operator(request)
                ? actionButton(
                    `${base}/scim-tokens/${token.tokenId}/revoke`,
                    u.t('console.orgs.token_revoke', { token: token.tokenId }),
                    { danger: true },
                  )
                : u.t('console.orgs.token_live')
          }</td></tr>`,
      )}</tbody></table>`
}
<p><a href="/console/orgs">${u.t('console.nav.orgs')}</a></p>`;
    return render(request, reply, org.name, body);
  }

  const slugOf = (request: FastifyRequest) => (request.params as { slug: string }).slug.slice(0, 64);
  get(
    '/console/orgs/:slug',
    'One organization: its members, teams, mail domains, connections and SCIM tokens',
    (request, reply) => orgPage(request, reply, slugOf(request)),
  );

  post(
    '/console/orgs/:slug/connections/:connectionId/remove',
    "Remove an org's connection and its links, as DELETE /org/{slug}/connections/{id} does (operator, sensitive)",
    (request, reply) =>
      change(request, reply, `/console/orgs/${encodeURIComponent(slugOf(request))}`, async (actor) => {
        const { org } = await orgDetail(kp, slugOf(request));
        const connectionId = (request.params as { connectionId: string }).connectionId.slice(0, 100);
        const { receipt } = await deleteConnection(kp, { orgId: org.orgId, actor }, connectionId);
        return orgPage(
          request,
          reply,
          org.slug,
          doneNotice(ui(request), ui(request).t('console.orgs.connection_removed'), receipt),
        );
      }),
  );

  post(
    '/console/orgs/:slug/scim-tokens/:tokenId/revoke',
    "Revoke an org's SCIM token, as DELETE /org/{slug}/scim-tokens/{id} does (operator, sensitive)",
    (request, reply) =>
      change(request, reply, `/console/orgs/${encodeURIComponent(slugOf(request))}`, async (actor) => {
        const { org } = await orgDetail(kp, slugOf(request));
        const tokenId = (request.params as { tokenId: string }).tokenId.slice(0, 64);
        const { receipt } = await revokeOrgScimToken(kp, org.orgId, tokenId, actor);
        return orgPage(
          request,
          reply,
          org.slug,
          doneNotice(ui(request), ui(request).t('console.orgs.token_revoked'), receipt),
        );
      }),
  );
}
