import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ORG_ROLES, type OrgRole } from '#lib/orgs/roles.js';
import type { MessageKey } from '#lib/i18n/translate.js';
import type { KeyplaneError } from '#lib/errors/keyplane-error.js';
import { accountPageAgain } from '../../pages/account-page.js';
import { html, page, raw, type SafeHtml } from '../../pages/layout.js';
import { refusalNote } from '../../pages/refusal-page.js';
import type { ErrorPage } from '../../plugins/errors.js';
import { type PageUi, uiOf } from '../../pages/ui.js';
import { requireSessionOrAdminToken } from '../../plugins/session.js';
import { loadOrgView, type OrgView } from '../../orgs/dashboard.js';
import { acceptInvite, inviteMember } from '../../orgs/invites.js';
import { changeRole, createOrg, loadMembership, removeMember, type Membership } from '../../orgs/membership.js';
import { addSite, promoteSite, removeSite } from '../../orgs/sites.js';
import { isHtmlFormPost, wantsJson } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { ratingSchema } from './schemas.js';
import { FORMS_JS } from '../../pages/scripts/forms.js';
import { proveSiteDomain } from '../../orgs/domain-proof.js';
import { scanOrgSite } from '../../orgs/scan-site.js';
import { teamListSchema, teamRoutes } from './teams.js';
import { teamsSection } from './teams-section.js';
import { mailDomainRoutes } from './mail-domains.js';
import { passkeyPolicyRoutes } from './passkey-policy.js';
import { passkeyPolicySection } from './passkey-policy-section.js';
import { showPasskeyPolicy, type PolicyView } from '../../passkeys/policy.js';
import { scimTokenRoutes } from './scim-tokens.js';
import { enrolmentLinkRoutes } from './enrolment-links.js';

const session = [{ sessionCookie: [] }];
const slugParams = {
  type: 'object',
  required: ['slug'],
  properties: { slug: { type: 'string', maxLength: 64 } },
} as const;
const receiptOnly = { 200: okObject({ receipt: receiptField }), ...errorResponses };

const siteSchema = {
  type: 'object',
  required: ['siteId', 'url', 'primary'],
  properties: {
    siteId: { type: 'string' },
    url: { type: 'string' },
    label: { type: ['string', 'null'] },
    primary: { type: 'boolean' },
    verified: { type: 'boolean' },
    rating: { anyOf: [ratingSchema, { type: 'null' }] },
    proof: {
      type: 'object',
      properties: {
        dns: {
          type: 'object',
          properties: { name: { type: 'string' }, type: { const: 'TXT' }, value: { type: 'string' } },
        },
        wellKnown: { type: 'object', properties: { url: { type: 'string' }, value: { type: 'string' } } },
      },
    },
  },
} as const;

export const orgViewSchema = okObject(
  {
    slug: { type: 'string' },
    name: { type: 'string' },
    website: { type: ['string', 'null'] },
    role: { enum: ORG_ROLES },
    members: {
      type: 'array',
      items: {
        type: 'object',
        properties: { user: { type: 'string' }, username: { type: 'string' }, role: { enum: ORG_ROLES } },
      },
    },
    sites: { type: 'array', items: siteSchema },
    rating: { anyOf: [ratingSchema, { type: 'null' }] },
    teams: teamListSchema,
  },
  ['slug', 'name', 'role', 'members', 'sites', 'rating'],
);

/** After a plain HTML form post, go back to the dashboard; otherwise answer JSON. */
function answer(request: FastifyRequest, reply: FastifyReply, slug: string, body: Record<string, unknown>) {
  if (isHtmlFormPost(request)) return reply.redirect(`/org/${encodeURIComponent(slug)}`, 303);
  return { ok: true, ...body };
}

/** Organizations: create, dashboard, sites, members and invites (docs/orgs.md). */
export default async function orgRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  await app.register(async (assets) => {
    assets.get(
      '/assets/forms.js',
      {
        config: { cache: 'no-cache' },
        schema: { tags: ['pages'], summary: 'Page script (ES module): the org and scan forms' },
      },
      async (_request, reply) => {
        reply.type('text/javascript; charset=utf-8');
        return FORMS_JS;
      },
    );
  });
  await app.register(async (app) => {
    // The team routes take the operator's admin token too (`keyplane orgs teams`, docs/orgs.md#teams).
    app.addHook('onRequest', requireSessionOrAdminToken);
    await app.register(mailDomainRoutes);
    await app.register(scimTokenRoutes);
    await app.register(passkeyPolicyRoutes);

    app.post(
      '/auth/orgs/create',
      {
        // The account page's plain form: a refusal shows that page again with the name and the reason.
        config: { errorPage: accountPageAgain },
        schema: {
          tags: ['orgs'],
          summary: 'Create an organization; the caller becomes its owner',
          security: session,
          body: {
            type: 'object',
            required: ['name'],
            properties: { name: { type: 'string', maxLength: 200 }, website: { type: 'string', maxLength: 2048 } },
          },
          response: {
            200: okObject(
              { orgId: { type: 'string' }, slug: { type: 'string' }, name: { type: 'string' }, receipt: receiptField },
              ['slug'],
            ),
            ...errorResponses,
          },
        },
      },
      async (request, reply) => {
        const { org, receipt } = await createOrg(
          services,
          request.kp.session!.identityId,
          request.body as { name: unknown; website?: unknown },
        );
        return answer(request, reply, org.slug, {
          orgId: org.orgId,
          slug: org.slug,
          name: org.name,
          ...(receipt ? { receipt } : {}),
        });
      },
    );

    app.get(
      '/org/:slug',
      {
        schema: {
          tags: ['orgs'],
          summary: 'The org dashboard (members only): HTML, or JSON with format=json',
          security: session,
          params: slugParams,
          querystring: { type: 'object', properties: { format: { enum: ['json', 'html'] } } },
          response: { 200: orgViewSchema, ...errorResponses },
        },
      },
      async (request, reply) => {
        const { slug } = request.params as { slug: string };
        const m = await loadMembership(services, slug, request.kp.session!.identityId);
        const view = await loadOrgView(services, m);
        // The JSON answer is the org view of docs/orgs.md; pending invites are for the managers' page.
        const { invites: _invites, ...contractView } = view;
        if (wantsJson(request)) return { ok: true, ...contractView };
        reply.type('text/html; charset=utf-8');
        return dashboardPage(request, view, { passkeyPolicy: await ownersPolicy(m) });
      },
    );

    const ownersPolicy = async (m: Membership) =>
      m.role === 'owner' ? showPasskeyPolicy(services, { membership: m }) : undefined;

    const dashboardPage = (request: FastifyRequest, view: OrgView, again: DashboardAgain = {}) => {
      const ui = uiOf(request, request.method === 'GET' ? undefined : `/org/${encodeURIComponent(view.slug)}`);
      return page({
        title: ui.t('orgs.title', { name: view.name }),
        nonce: request.kp.cspNonce,
        ui,
        scripts: ['/assets/forms.js'],
        body: dashboard(view, ui, services.now(), again),
      });
    };

    /**
     * The dashboard's plain forms: a refusal shows the dashboard again with the reason and the input
     * (docs/errors.md#one-error-path); for someone who may not see it (no such org, not a member) the
     * shared refusal page.
     */
    const dashboardAgain: ErrorPage = async (request, failure) => {
      const { slug } = request.params as { slug: string };
      let view: OrgView;
      let m: Membership;
      try {
        m = await loadMembership(services, slug, request.kp.session!.identityId);
        view = await loadOrgView(services, m);
      } catch {
        return undefined;
      }
      return dashboardPage(request, view, {
        refusal: failure,
        kept: (request.body ?? {}) as Record<string, unknown>,
        passkeyPolicy: await ownersPolicy(m),
      });
    };

    const mutation = (
      path: string,
      summary: string,
      body: object | null,
      handler: (request: FastifyRequest, slug: string) => Promise<Record<string, unknown>>,
      errorPage: ErrorPage = dashboardAgain,
    ) =>
      app.post(
        `/org/:slug/${path}`,
        {
          config: { errorPage },
          schema: {
            tags: ['orgs'],
            summary,
            security: session,
            params: slugParams,
            ...(body ? { body } : {}),
            response: receiptOnly,
          },
        },
        async (request, reply) => {
          const { slug } = request.params as { slug: string };
          return answer(request, reply, slug, await handler(request, slug));
        },
      );

    const member = (request: FastifyRequest, slug: string) =>
      loadMembership(services, slug, request.kp.session!.identityId);
    const actor = (request: FastifyRequest) => request.kp.session!.identityId;
    const siteIdBody = {
      type: 'object',
      required: ['siteId'],
      properties: { siteId: { type: 'string', maxLength: 100 } },
    };
    const userBody = { type: 'object', required: ['user'], properties: { user: { type: 'string', maxLength: 100 } } };

    mutation(
      'websites/add',
      'Register a site (https); the first becomes primary',
      {
        type: 'object',
        required: ['url'],
        properties: { url: { type: 'string', maxLength: 2048 }, label: { type: 'string', maxLength: 200 } },
      },
      async (request, slug) => {
        const { site, receipt } = await addSite(
          services,
          await member(request, slug),
          actor(request),
          request.body as { url: unknown; label?: unknown },
        );
        return { siteId: site.siteId, primary: site.primary, ...(receipt ? { receipt } : {}) };
      },
    );
    mutation(
      'websites/remove',
      'Remove a site (the oldest remaining one becomes primary if it was)',
      siteIdBody,
      async (request, slug) =>
        removeSite(services, await member(request, slug), actor(request), (request.body as { siteId: string }).siteId),
    );
    mutation('websites/primary', 'Promote a site to primary', siteIdBody, async (request, slug) =>
      promoteSite(services, await member(request, slug), actor(request), (request.body as { siteId: string }).siteId),
    );
    mutation(
      'members/role',
      "Change a member's role; only owners touch the owner role, the last owner stays",
      {
        type: 'object',
        required: ['user', 'role'],
        properties: { user: { type: 'string', maxLength: 100 }, role: { enum: ORG_ROLES } },
      },
      async (request, slug) => {
        const { user, role } = request.body as { user: string; role: OrgRole };
        return changeRole(services, await member(request, slug), actor(request), user, role);
      },
    );
    mutation('members/remove', 'Remove a member; the last owner is never removable', userBody, async (request, slug) =>
      removeMember(services, await member(request, slug), actor(request), (request.body as { user: string }).user),
    );
    mutation(
      'members/invite',
      'Invite an account by username; it sees the invite on /account',
      {
        type: 'object',
        required: ['username'],
        properties: { username: { type: 'string', maxLength: 64 }, role: { enum: ORG_ROLES, default: 'member' } },
      },
      async (request, slug) => {
        const { username, role } = request.body as { username: string; role: OrgRole };
        const { identityId, receipt } = await inviteMember(
          services,
          await member(request, slug),
          actor(request),
          username,
          role,
        );
        return { user: identityId, ...(receipt ? { receipt } : {}) };
      },
    );
    mutation(
      'websites/verify',
      "Prove control of a site's domain (DNS TXT _keyplane.<host> or /.well-known/keyplane-site.txt); only then is a seal shown",
      siteIdBody,
      async (request, slug) =>
        proveSiteDomain(
          services,
          await member(request, slug),
          actor(request),
          (request.body as { siteId: string }).siteId,
        ),
    );

    app.post(
      '/org/:slug/scan',
      {
        config: { errorPage: dashboardAgain },
        schema: {
          tags: ['orgs'],
          summary: 'Scan the primary site (or `siteId`, or a `website` override) and answer with the signed Rating',
          security: session,
          params: slugParams,
          body: {
            type: 'object',
            properties: { siteId: { type: 'string', maxLength: 100 }, website: { type: 'string', maxLength: 2048 } },
          },
          response: {
            200: okObject({ rating: ratingSchema, siteId: { type: ['string', 'null'] }, receipt: receiptField }, [
              'rating',
            ]),
            ...errorResponses,
          },
        },
      },
      async (request, reply) => {
        const { slug } = request.params as { slug: string };
        const result = await scanOrgSite(
          services,
          await member(request, slug),
          (request.body ?? {}) as { siteId?: string; website?: string },
        );
        return answer(request, reply, slug, result);
      },
    );

    await teamRoutes(app, dashboardAgain);
    await enrolmentLinkRoutes(app, dashboardAgain);

    // Accepted on the account page (the invitee is no member yet): a refusal shows that page again.
    mutation(
      'members/accept',
      "Accept the caller's invite to this organization",
      null,
      async (request, slug) => {
        const { role, receipt } = await acceptInvite(services, slug, actor(request));
        return { role, ...(receipt ? { receipt } : {}) };
      },
      accountPageAgain,
    );
  });
}

const STALE_MS = 30 * 86_400_000;

const ROLES: Record<OrgRole, MessageKey> = {
  owner: 'orgs.role.owner',
  admin: 'orgs.role.admin',
  member: 'orgs.role.member',
};

/**
 * The invite form's lines for forms.js (docs/i18n.md): the sentence per role, with `{username}`
 * left for the script to fill in, the role names and the "not accepted yet" mark.
 */
function inviteLines(t: PageUi['t'], role: (r: OrgRole) => string): SafeHtml {
  const username = '{username}';
  return html` data-msg-invited-member="${t('orgs.invite.sent', { username, role: role('member') })}" data-msg-invited-admin="${t('orgs.invite.sent', { username, role: role('admin') })}" data-msg-invited-owner="${t('orgs.invite.sent', { username, role: role('owner') })}" data-msg-role-member="${role('member')}" data-msg-role-admin="${role('admin')}" data-msg-role-owner="${role('owner')}" data-msg-not-accepted="${t('orgs.invites.not_accepted')}"`;
}

/** What the dashboard shows besides the org: a refusal of one of its forms, and that form's input. */
interface DashboardAgain {
  refusal?: KeyplaneError;
  kept?: Record<string, unknown>;
  /** For an owner: the org's passkey policy and what it refuses. */
  passkeyPolicy?: PolicyView;
}

function dashboard(view: OrgView, ui: PageUi, now: number, again: DashboardAgain) {
  const { t } = ui;
  const kept = (name: string) => (typeof again.kept?.[name] === 'string' ? (again.kept[name] as string) : '');
  // English keeps the unambiguous ISO form, as the account page.
  const when = (iso: string) =>
    `${ui.locale === 'en' ? iso.replace('T', ' ').slice(0, 16) : ui.dateTime(Date.parse(iso))} UTC`;
  const role = (r: OrgRole) => t(ROLES[r]);
  const code = (c: string) => `<code>${c}</code>`;
  const manager = view.role !== 'member';
  const slug = encodeURIComponent(view.slug);
  const gradeOf = (r: OrgView['rating']) => {
    if (!r) return html`<span class="muted">${t('orgs.not_scanned')}</span>`;
    const stale = now - Date.parse(r.scanned_at) > STALE_MS;
    return html`<strong data-field="grade">${r.grade}</strong> (${r.score}) · ${when(r.scanned_at)}${stale ? html` · <strong>${t('orgs.stale')}</strong>` : ''}`;
  };
  // A managed account without a passkey (docs/scim.md#a-new-link): whether its link is live, and a new one for managers.
  const enrolmentNote = (user: string, live: boolean) =>
    html` · <span class="muted" data-enrolment="${live ? 'live' : 'none'}">${t('orgs.members.no_passkey')} · ${t(live ? 'orgs.members.link_live' : 'orgs.members.link_none')}</span>${
      manager
        ? html` <form method="post" data-kp-post action="/org/${slug}/members/enrolment-link"><input type="hidden" name="user" value="${user}"><button type="submit" class="secondary" data-action="send-enrolment">${t('orgs.members.send_link')}</button></form>`
        : ''
    }`;
  return html`<h1>${view.name}</h1>
${again.refusal ? html`<p id="form-error" role="alert" class="error">${refusalNote(ui, again.refusal)}</p>\n` : ''}<p id="form-status" role="status" aria-live="polite"></p>
<p>${raw(ui.rich('orgs.your_role', { role: (c) => `<strong data-field="role" data-value="${view.role}">${c}</strong>` }, { value: role(view.role) }))} ${t('orgs.headline')} ${gradeOf(view.rating)}</p>
<h2 id="sites-h">${t('orgs.sites.heading')}</h2>
<table aria-labelledby="sites-h"><thead><tr><th scope="col">${t('orgs.sites.site')}</th><th scope="col">${t('orgs.sites.rating')}</th><th scope="col">${t('orgs.sites.domain')}</th>${manager ? html`<th scope="col">${t('orgs.sites.actions')}</th>` : ''}</tr></thead><tbody>
${view.sites.map(
  (
    s,
  ) => html`<tr data-site="${s.siteId}"><td>${s.label ? html`${s.label}: ` : ''}<a href="/verify/${s.siteId}">${s.url}</a>${s.primary ? html` <strong>${t('orgs.sites.primary')}</strong>` : ''}</td>
<td>${gradeOf(s.rating)}</td>
<td>${s.verified ? t('orgs.sites.verified') : raw(ui.rich('orgs.sites.not_verified', { code }, { value: s.proof.dns.value, name: s.proof.dns.name, url: s.proof.wellKnown.url }))}</td>
${
  manager
    ? html`<td>
<form method="post" data-kp-post action="/org/${slug}/scan"><input type="hidden" name="siteId" value="${s.siteId}"><button type="submit" data-action="scan">${t('orgs.sites.scan')}</button></form>
${s.verified ? '' : html`<form method="post" data-kp-post action="/org/${slug}/websites/verify"><input type="hidden" name="siteId" value="${s.siteId}"><button type="submit" class="secondary">${t('orgs.sites.check_domain')}</button></form>`}
${s.primary ? '' : html`<form method="post" data-kp-post action="/org/${slug}/websites/primary"><input type="hidden" name="siteId" value="${s.siteId}"><button type="submit" class="secondary">${t('orgs.sites.make_primary')}</button></form>`}
<form method="post" data-kp-post action="/org/${slug}/websites/remove"><input type="hidden" name="siteId" value="${s.siteId}"><button type="submit" class="secondary">${t('orgs.sites.remove')}</button></form>
</td>`
    : ''
}</tr>`,
)}
</tbody></table>
${
  manager
    ? html`<form method="post" data-kp-post action="/org/${slug}/websites/add" aria-labelledby="add-site-h"><h3 id="add-site-h">${t('orgs.add.heading')}</h3>
<label for="site-url">${t('orgs.add.url')}</label> <input id="site-url" name="url" type="url" required placeholder="https://www.example.com/" value="${kept('url')}">
<label for="site-label">${t('orgs.add.label')}</label> <input id="site-label" name="label" type="text" value="${kept('label')}">
<button type="submit" data-action="add-site">${t('orgs.add.button')}</button></form>`
    : ''
}
<h2 id="members-h">${t('orgs.members.heading')}</h2>
<ul aria-labelledby="members-h">${view.members.map((x) => html`<li data-member="${x.user}">${x.username} · ${role(x.role)}${x.enrolment ? enrolmentNote(x.user, x.enrolment.linkLive) : ''}</li>`)}</ul>
<h3 id="pending-h">${t('orgs.invites.heading')}</h3>
<ul id="pending-invites" aria-labelledby="pending-h">${view.invites.length ? view.invites.map((x) => html`<li data-pending-invite="${x.username}">${x.username} · ${role(x.role)} <span class="muted">${t('orgs.invites.not_accepted')}</span></li>`) : html`<li class="muted" data-none>${t('orgs.invites.none')}</li>`}</ul>
${
  manager
    ? html`<form method="post" data-kp-post data-then="invited" action="/org/${slug}/members/invite" aria-labelledby="invite-h"${inviteLines(t, role)}><h3 id="invite-h">${t('orgs.invite.heading')}</h3>
<label for="invite-username">${t('orgs.invite.username')}</label> <input id="invite-username" name="username" type="text" required value="${kept('username')}">
<label for="invite-role">${t('orgs.invite.role')}</label> <select id="invite-role" name="role"><option value="member">${role('member')}</option><option value="admin">${role('admin')}</option>${view.role === 'owner' ? html`<option value="owner">${role('owner')}</option>` : ''}</select>
<button type="submit">${t('orgs.invite.button')}</button></form>`
    : ''
}
${teamsSection(view, ui, manager, kept)}
${again.passkeyPolicy ? passkeyPolicySection(view.slug, again.passkeyPolicy, ui) : ''}`;
}
