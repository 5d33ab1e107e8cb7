import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { scimSyncStateIfAny } from '../../scim/push-queue.js';
import { scimLine } from '../clients/scim-sync.js';
import { KeyplaneError } from '#lib/errors/keyplane-error.js';
import { validateClientMetadata, usesClientSecret } from '#lib/oauth/client-metadata.js';
import { html, raw, type SafeHtml } from '../../pages/layout.js';
import { refusalText } from '../../pages/link-pages.js';
import { type PageUi } from '../../pages/ui.js';
import { actionButton, age, doneNotice, nextLink, refusalNotice } from '../../pages/console-views.js';
import { takeKeptForm } from '../../console/resume.js';
import { findClient, revokeClient, rotateClientSecret } from '../../clients/operator.js';
import { registerClient, updateClient } from '../../clients/registration.js';
import { formRegistration, uriList } from '../clients/apps.js';
import { explainGatewayAccess, gatewayRulesView } from '../../managed-gateways/explain.js';
import { gatewayEnforcement } from '../../managed-gateways/issue-config.js';
import { listClientsPage, PAGE_SIZE } from '../../console/views.js';
import type { StoredClient } from '../../storage/interface.js';
import { type ConsoleKit } from './kit.js';

const code = { code: (inner: string) => `<code>${inner}</code>` };

/** Clients: the list, registration, one client with its gateway rules, edit, rotate, delete. */
export function clientsSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, render, opened, operator, change, get, post } = c;
  function clientForm(
    u: PageUi,
    action: string,
    values: Record<string, string>,
    error?: KeyplaneError,
    revision?: number,
  ): SafeHtml {
    const refusal = refusalNotice(error ? refusalText(u, error) : '');
    const confidential = values.client_type !== 'public';
    return html`<form method="post" action="${action}">
${refusal.region}${revision === undefined ? '' : html`<input type="hidden" name="revision" value="${String(revision)}">`}
<label for="client_name">${u.t('console.col.name')}</label>
<input id="client_name" name="client_name" type="text" maxlength="200" value="${values.client_name ?? ''}">
<label for="redirect_uris">${u.t('console.clients.redirects')}</label>
<textarea id="redirect_uris" name="redirect_uris" rows="3" cols="60"${refusal.field({ first: true })}>${values.redirect_uris ?? ''}</textarea>
${
  revision === undefined
    ? html`<label for="client_type">${u.t('console.clients.type')}</label>
<select id="client_type" name="client_type"><option value="confidential"${confidential ? ' selected' : ''}>${u.t('console.clients.confidential')}</option><option value="public"${confidential ? '' : ' selected'}>${u.t('console.clients.public')}</option></select>`
    : ''
}
<button type="submit">${u.t(revision === undefined ? 'console.clients.register' : 'console.clients.save')}</button>
</form>`;
  }

  async function clientsPage(request: FastifyRequest, reply: FastifyReply, form: SafeHtml | null, status = 200) {
    const u = ui(request);
    const after = (request.query as { after?: unknown }).after;
    const list = await listClientsPage(kp, typeof after === 'string' ? after.slice(0, 200) : null);
    const kept =
      form ??
      (operator(request)
        ? clientForm(
            u,
            '/console/clients',
            await takeKeptForm(kp, opened(request), (request.query as { resume?: unknown }).resume),
          )
        : null);
    const body = html`<table><thead><tr><th scope="col">client_id</th><th scope="col">${u.t('console.col.name')}</th><th scope="col">${u.t('console.clients.type')}</th><th scope="col">${u.t('console.col.owner')}</th></tr></thead>
<tbody>${list.map((c) => html`<tr><td><a href="/console/clients/${c.clientId}"><code>${c.clientId}</code></a></td><td>${c.metadata.client_name ?? ''}</td><td>${c.type}</td><td>${c.ownerId ? html`<code>${c.ownerId}</code>` : u.t('console.clients.operator_owned')}</td></tr>`)}</tbody></table>
${nextLink(u, '/console/clients', {}, list.length === PAGE_SIZE ? list.at(-1)!.clientId : null)}
${kept ? html`<h2>${u.t('console.clients.register_heading')}</h2>${kept}` : ''}`;
    return render(request, reply, u.t('console.nav.clients'), body, status);
  }

  get('/console/clients', 'Clients a page at a time, and the registration form', (request, reply) =>
    clientsPage(request, reply, null),
  );

  post('/console/clients', 'Register a client as the operator (operator, sensitive)', (request, reply) =>
    change(request, reply, '/console/clients', async (actor, fields) => {
      const u = ui(request);
      try {
        const metadata = validateClientMetadata(formRegistration(fields), {
          defaultScopes: kp.config.oidc.defaultClientScopes,
        });
        const made = await registerClient(kp, metadata, { by: 'admin', ownerId: null }, { actor });
        return clientPage(
          request,
          reply,
          made.client.clientId,
          doneNotice(
            u,
            u.t('apps.done.registered'),
            made.receipt,
            secretShown(u, made.client, made.issued.clientSecret),
          ),
          201,
        );
      } catch (error) {
        if (!(error instanceof KeyplaneError)) throw error;
        return clientsPage(request, reply, clientForm(u, '/console/clients', fields, error), error.status);
      }
    }),
  );

  function secretShown(u: PageUi, client: StoredClient, secret: string | undefined): SafeHtml {
    return html`<p>${raw(u.rich('apps.client_id', code, { id: client.clientId }))}</p>${secret === undefined ? '' : html`<p>${raw(u.rich('apps.secret_once', code, { secret }))}</p>`}`;
  }

  async function clientPage(
    request: FastifyRequest,
    reply: FastifyReply,
    clientId: string,
    notice?: SafeHtml,
    status = 200,
    form?: SafeHtml,
  ) {
    const u = ui(request);
    const client = await findClient(kp, clientId);
    const base = `/console/clients/${client.clientId}`;
    const query = request.query as { user?: unknown; path?: unknown; resume?: unknown };
    let gateway: SafeHtml = html``;
    if (client.metadata.gateway) {
      const rules = await gatewayRulesView(kp, client.clientId);
      const status = await gatewayEnforcement(kp, client);
      const who =
        typeof query.user === 'string' && typeof query.path === 'string' && query.path.startsWith('/')
          ? await explainGatewayAccess(kp, client.clientId, query.user.slice(0, 100), query.path.slice(0, 2048)).then(
              (e) => html`<p role="status"><strong>${e.decision}</strong>: ${e.because}</p>`,
              (e: unknown) =>
                e instanceof KeyplaneError
                  ? html`<p role="alert" class="error">${refusalText(u, e)}</p>`
                  : Promise.reject(e),
            )
          : html``;
      gateway = html`<h2>${u.t('console.gateway.heading')}</h2>
<p>${u.t('console.col.mode')}: ${client.metadata.gateway.mode}; ${u.t('console.col.status')}: ${status.status} (${status.reason}); ${u.t('console.col.evidence')}: ${age(u, status.observed[0]?.receivedAt, status.now)}</p>
<p>${u.t('console.gateway.sign_in')}: ${rules.signIn ? rules.signIn.join('; ') : u.t('console.gateway.anyone')}</p>
<ul>${rules.routes.map((r) => html`<li><code>${r.path}</code>: ${r.rules.join('; ')}</li>`)}</ul>
<form method="get" action="${base}"><fieldset><legend>${u.t('console.gateway.who')}</legend>
<label for="who-user">${u.t('console.col.username')}</label><input id="who-user" name="user" type="text" maxlength="100" value="${typeof query.user === 'string' ? query.user : ''}">
<label for="who-path">${u.t('console.gateway.path')}</label><input id="who-path" name="path" type="text" maxlength="2048" value="${typeof query.path === 'string' ? query.path : '/'}">
<button type="submit" class="secondary">${u.t('console.gateway.explain')}</button></fieldset></form>
${who}`;
    }
    const kept = operator(request) ? await takeKeptForm(kp, opened(request), query.resume) : {};
    const editValues = {
      client_name: kept.client_name ?? client.metadata.client_name ?? '',
      redirect_uris: kept.redirect_uris ?? (client.metadata.redirect_uris ?? []).join('\n'),
    };
    const changes = operator(request)
      ? html`<h2>${u.t('console.changes')}</h2>
${usesClientSecret(client.metadata.token_endpoint_auth_method) ? actionButton(`${base}/rotate`, u.t('console.clients.rotate')) : ''}
${actionButton(`${base}/delete`, u.t('console.clients.delete'), { danger: true })}
<h3>${u.t('console.clients.edit')}</h3>
${form ?? clientForm(u, `${base}/update`, editValues, undefined, client.revision)}`
      : '';
    const scim = scimLine(u, (await scimSyncStateIfAny(kp, client.clientId)) ?? undefined);
    const body = html`${notice ?? ''}
<dl>
<dt>client_id</dt><dd><code>${client.clientId}</code></dd>
<dt>${u.t('console.col.name')}</dt><dd>${client.metadata.client_name ?? ''}</dd>
<dt>${u.t('console.clients.type')}</dt><dd>${client.type}</dd>
<dt>${u.t('console.col.owner')}</dt><dd>${client.ownerId ?? u.t('console.clients.operator_owned')}</dd>
<dt>${u.t('console.clients.redirects')}</dt><dd>${(client.metadata.redirect_uris ?? []).map((r) => html`<code>${r}</code> `)}</dd>
<dt>${u.t('console.clients.revision')}</dt><dd>${client.revision}</dd>
</dl>
${scim}
${gateway}
${changes}
<p><a href="/console/clients">${u.t('console.nav.clients')}</a></p>`;
    return render(request, reply, client.metadata.client_name ?? client.clientId, body, status);
  }

  const clientRef = (request: FastifyRequest) => (request.params as { clientId: string }).clientId;
  get(
    '/console/clients/:clientId',
    'One client: its registration, gateway rules in words, status and evidence',
    (request, reply) => clientPage(request, reply, clientRef(request)),
  );

  post(
    '/console/clients/:clientId/rotate',
    'Rotate a client secret, shown once (operator, sensitive)',
    (request, reply) =>
      change(request, reply, `/console/clients/${encodeURIComponent(clientRef(request))}`, async (actor) => {
        const u = ui(request);
        const { client, secret, receipt } = await rotateClientSecret(
          kp,
          await findClient(kp, clientRef(request)),
          actor,
        );
        return clientPage(
          request,
          reply,
          client.clientId,
          doneNotice(u, u.t('apps.done.rotated'), receipt, secretShown(u, client, secret)),
        );
      }),
  );

  post(
    '/console/clients/:clientId/update',
    'Save a client from its edit form (operator, sensitive; stale revisions refused)',
    (request, reply) =>
      change(request, reply, `/console/clients/${encodeURIComponent(clientRef(request))}`, async (actor, fields) => {
        const u = ui(request);
        const client = await findClient(kp, clientRef(request));
        const revision = /^\d{1,9}$/.test(fields.revision ?? '') ? Number(fields.revision) : 0;
        try {
          const metadata = validateClientMetadata({
            ...client.metadata,
            client_name: (fields.client_name ?? '').trim() || undefined,
            redirect_uris: uriList(fields.redirect_uris),
          });
          const saved = await updateClient(kp, client, revision, metadata, actor);
          return clientPage(request, reply, client.clientId, doneNotice(u, u.t('apps.done.saved'), saved.receipt));
        } catch (error) {
          if (!(error instanceof KeyplaneError)) throw error;
          const form = clientForm(u, `/console/clients/${client.clientId}/update`, fields, error, client.revision);
          return clientPage(request, reply, client.clientId, undefined, error.status, form);
        }
      }),
  );

  post('/console/clients/:clientId/delete', 'Delete a client; its grants end (operator, sensitive)', (request, reply) =>
    change(request, reply, `/console/clients/${encodeURIComponent(clientRef(request))}`, async (actor) => {
      const { receipt } = await revokeClient(kp, clientRef(request), actor);
      return render(
        request,
        reply,
        ui(request).t('console.nav.clients'),
        doneNotice(ui(request), ui(request).t('console.clients.deleted'), receipt),
      );
    }),
  );
}
