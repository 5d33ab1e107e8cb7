import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import type { Actor } from '../../events/types.js';
import { html, type SafeHtml } from '../../pages/layout.js';
import { type PageUi } from '../../pages/ui.js';
import { actionButton, doneNotice, nextLink } from '../../pages/console-views.js';
import { grantOperatorRole, revokeOperatorRole } from '../../console/operators.js';
import { deleteAccount, disableAccount, enableAccount, findAccount } from '../../accounts/lifecycle.js';
import { revokeSessions } from '../../clients/operator.js';
import { accountDetail, searchAccounts } from '../../console/views.js';
import { type ConsoleKit, ROLE_KEYS } from './kit.js';

/** Accounts: search, one account, and its changes. */
export function accountsSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, render, operator, change, get, post } = c;
  get('/console/accounts', 'Accounts: search by username, e-mail or id, a page at a time', async (request, reply) => {
    const u = ui(request);
    const query = request.query as { q?: unknown; after?: unknown };
    const q = typeof query.q === 'string' ? query.q.trim().slice(0, 254) : '';
    const after = typeof query.after === 'string' ? query.after.slice(0, 100) : null;
    const { found, next } = await searchAccounts(kp, q, after);
    const body = html`<form method="get" action="/console/accounts" role="search">
<label for="q">${u.t('console.accounts.search')}</label>
<input id="q" name="q" type="search" value="${q}" maxlength="254">
<button type="submit" class="secondary">${u.t('console.search')}</button>
</form>
${
  found.length === 0
    ? html`<p>${u.t('console.accounts.none')}</p>`
    : html`<table><thead><tr><th scope="col">${u.t('console.col.username')}</th><th scope="col">${u.t('console.col.id')}</th><th scope="col">${u.t('console.col.state')}</th></tr></thead>
<tbody>${found.map((a) => html`<tr><td><a href="/console/accounts/${a.identityId}">${a.username}</a></td><td><code>${a.identityId}</code></td><td>${a.state}</td></tr>`)}</tbody></table>`
}
${nextLink(u, '/console/accounts', q ? { q } : {}, next)}`;
    return render(request, reply, u.t('console.nav.accounts'), body);
  });

  async function accountPage(request: FastifyRequest, reply: FastifyReply, ref: string, notice?: SafeHtml) {
    const u = ui(request);
    const { account, sessions, passkeys, emails, orgs, agents, role } = await accountDetail(kp, ref);
    const id = account.identityId;
    const base = `/console/accounts/${id}`;
    const changes = operator(request)
      ? html`<h2>${u.t('console.changes')}</h2>
${account.state === 'active' ? actionButton(`${base}/disable`, u.t('console.account.disable'), { danger: true }) : actionButton(`${base}/enable`, u.t('console.account.enable'))}
${actionButton(`${base}/end-sessions`, u.t('console.account.end_sessions'))}
<form method="post" action="${base}/role">
<label for="role">${u.t('console.account.role')}</label>
<select id="role" name="role"><option value="none">${u.t('console.role.none')}</option>${(['operator', 'auditor'] as const).map((r) => html`<option value="${r}"${r === role ? ' selected' : ''}>${u.t(ROLE_KEYS[r])}</option>`)}</select>
<button type="submit">${u.t('console.account.set_role')}</button>
</form>
<form method="post" action="${base}/delete">
<label for="confirm">${u.t('console.account.delete_confirm', { username: account.username })}</label>
<input id="confirm" name="confirm" type="text" autocomplete="off" maxlength="100">
<button type="submit" class="danger">${u.t('console.account.delete')}</button>
</form>`
      : '';
    const body = html`${notice ?? ''}
<dl>
<dt>${u.t('console.col.username')}</dt><dd>${account.username}</dd>
<dt>${u.t('console.col.id')}</dt><dd><code>${id}</code></dd>
<dt>${u.t('console.col.state')}</dt><dd data-field="state">${account.state}</dd>
<dt>${u.t('console.account.role')}</dt><dd>${role ? u.t(ROLE_KEYS[role]) : u.t('console.role.none')}</dd>
<dt>${u.t('console.account.sessions')}</dt><dd>${sessions.length}</dd>
<dt>${u.t('console.account.passkeys')}</dt><dd>${passkeys.length}</dd>
<dt>${u.t('console.account.emails')}</dt><dd>${emails.map((e) => html`${e.email}${e.verifiedAt ? '' : html` <span class="muted">(${u.t('console.unverified')})</span>`} `)}</dd>
<dt>${u.t('console.account.orgs')}</dt><dd>${orgs.map((o) => html`${o.slug} (${o.role}) `)}</dd>
<dt>${u.t('console.account.agents')}</dt><dd>${agents.map((a) => html`<code>${a.agentId}</code> (${a.state}) `)}</dd>
</dl>
${changes}
<p><a href="/console/accounts">${u.t('console.nav.accounts')}</a></p>`;
    return render(request, reply, account.username, body);
  }

  const accountRef = (request: FastifyRequest) => (request.params as { identityId: string }).identityId;
  get(
    '/console/accounts/:identityId',
    'One account: its sessions, passkeys, addresses, orgs and agents',
    (request, reply) => accountPage(request, reply, accountRef(request)),
  );

  const accountChange = (
    action: string,
    summary: string,
    work: (
      id: string,
      actor: Actor,
      fields: Record<string, string>,
      u: PageUi,
    ) => Promise<{ text: string; receipt?: string }>,
  ) =>
    post(`/console/accounts/:identityId/${action}`, summary, (request, reply) =>
      change(request, reply, `/console/accounts/${encodeURIComponent(accountRef(request))}`, async (actor, fields) => {
        const account = await findAccount(kp, accountRef(request));
        const done = await work(account.identityId, actor, fields, ui(request));
        return accountPage(request, reply, account.identityId, doneNotice(ui(request), done.text, done.receipt));
      }),
    );

  accountChange('disable', 'Disable an account (operator, sensitive)', async (id, actor, _f, u) => {
    const { receipt } = await disableAccount(kp, id, actor);
    return { text: u.t('console.account.disabled'), ...(receipt ? { receipt } : {}) };
  });
  accountChange('enable', 'Enable an account (operator, sensitive)', async (id, actor, _f, u) => {
    const { receipt } = await enableAccount(kp, id, actor);
    return { text: u.t('console.account.enabled'), ...(receipt ? { receipt } : {}) };
  });
  accountChange('end-sessions', "End an account's sessions (operator, sensitive)", async (id, actor, _f, u) => {
    const { revoked, receipts } = await revokeSessions(kp, id, undefined, actor);
    return {
      text: u.t('console.account.sessions_ended', { count: revoked.length }),
      ...(receipts[0] ? { receipt: receipts[0] } : {}),
    };
  });
  accountChange('role', 'Grant or revoke a console role (operator, sensitive)', async (id, actor, fields, u) => {
    const done =
      fields.role === 'none'
        ? await revokeOperatorRole(kp, id, actor)
        : await grantOperatorRole(kp, id, fields.role, actor);
    return { text: u.t('console.account.role_set'), ...(done.receipt ? { receipt: done.receipt } : {}) };
  });

  post(
    '/console/accounts/:identityId/delete',
    'Delete an account (operator, sensitive; the username typed to confirm)',
    (request, reply) =>
      change(request, reply, `/console/accounts/${encodeURIComponent(accountRef(request))}`, async (actor, fields) => {
        const account = await findAccount(kp, accountRef(request));
        if (fields.confirm !== account.username) throw fail('confirmation_mismatch', 'type the username to confirm');
        const { receipt } = await deleteAccount(kp, account.identityId, 'admin', actor);
        return render(
          request,
          reply,
          ui(request).t('console.nav.accounts'),
          doneNotice(ui(request), ui(request).t('console.account.deleted'), receipt),
        );
      }),
  );
}
