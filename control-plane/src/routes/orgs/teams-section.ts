import { html, type SafeHtml } from '../../pages/layout.js';
import type { PageUi } from '../../pages/ui.js';
import type { OrgView } from '../../orgs/dashboard.js';

/** The teams section (docs/orgs.md#teams): every member sees the teams; admins and owners change them. */
export function teamsSection(view: OrgView, ui: PageUi, manager: boolean, kept: (name: string) => string): SafeHtml {
  const { t } = ui;
  const slug = encodeURIComponent(view.slug);
  const usernames = new Map(view.members.map((m) => [m.user, m.username]));
  const form = (team: string, path: string, fields: SafeHtml, button: string, secondary = false) =>
    html`<form method="post" data-kp-post action="/org/${slug}/teams/${encodeURIComponent(team)}/${path}">${fields}<button type="submit"${secondary ? html` class="secondary"` : ''}>${button}</button></form>`;
  const memberPicker = (team: string) =>
    html`<label for="team-${team}-user">${t('orgs.teams.member')}</label> <select id="team-${team}-user" name="user">${view.members.map((m) => html`<option value="${m.user}">${m.username}</option>`)}</select> `;
  return html`<h2 id="teams-h">${t('orgs.teams.heading')}</h2>
<ul aria-labelledby="teams-h">${
    view.teams.length
      ? view.teams.map(
          (team) =>
            html`<li data-team="${team.name}"><strong>${team.displayName}</strong> <code>${team.name}</code>: ${
              team.members.length
                ? team.members.map((id) => usernames.get(id) ?? id).join(', ')
                : html`<span class="muted">${t('orgs.teams.no_members')}</span>`
            }${
              manager
                ? html`
${form(team.name, 'members/add', memberPicker(team.name), t('orgs.teams.add_member'))}
${form(team.name, 'members/remove', memberPicker(`${team.name}-out`), t('orgs.teams.remove_member'), true)}
${form(team.name, 'rename', html`<label for="team-${team.name}-display">${t('orgs.teams.display_name')}</label> <input id="team-${team.name}-display" name="displayName" type="text" required value="${team.displayName}"> `, t('orgs.teams.rename'), true)}
${form(team.name, 'delete', html``, t('orgs.teams.delete'), true)}`
                : ''
            }</li>`,
        )
      : html`<li class="muted" data-none>${t('orgs.teams.none')}</li>`
  }</ul>
${
  manager
    ? html`<form method="post" data-kp-post action="/org/${slug}/teams" aria-labelledby="create-team-h"><h3 id="create-team-h">${t('orgs.teams.create')}</h3>
<label for="team-name">${t('orgs.teams.name')}</label> <input id="team-name" name="name" type="text" required pattern="[a-z0-9-]{1,63}" value="${kept('name')}">
<label for="team-display">${t('orgs.teams.display_name')}</label> <input id="team-display" name="displayName" type="text" value="${kept('displayName')}">
<button type="submit" data-action="create-team">${t('orgs.teams.create')}</button></form>`
    : ''
}`;
}
