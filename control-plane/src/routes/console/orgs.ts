import type { FastifyInstance, FastifyRequest } from 'fastify';
import { html } from '../../pages/layout.js';
import { age, nextLink } from '../../pages/console-views.js';
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
 * Organizations: every org a page at a time, one org with its members, teams and mail domains.
 * Read-only for operators and auditors alike: an org's owners change it on its own pages.
 */
export function orgsSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, render, get } = c;

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

  get('/console/orgs/:slug', 'One organization: its members, teams and mail domains', async (request, reply) => {
    const u = ui(request);
    const now = kp.now();
    const { org, members, teams, mailDomains } = await orgDetail(kp, (request.params as { slug: string }).slug);
    const body = html`<dl>
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
<h2>${u.t('console.orgs.connections')}</h2>
<p data-field="connections">${u.t('console.orgs.connections_none')}</p>
<p><a href="/console/orgs">${u.t('console.nav.orgs')}</a></p>`;
    return render(request, reply, org.name, body);
  });
}
