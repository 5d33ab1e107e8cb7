import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { KeyplaneError } from '#lib/errors/keyplane-error.js';
import { html, raw, type SafeHtml } from '../../pages/layout.js';
import { refusalText } from '../../pages/link-pages.js';
import type { PageUi } from '../../pages/ui.js';
import { actionButton, age, doneNotice, refusalNotice } from '../../pages/console-views.js';
import type { Actor } from '../../events/types.js';
import {
  createWebhook,
  deleteWebhook,
  listWebhooks,
  ownedWebhook,
  testWebhook,
  webhookAttempts,
  type WebhookOwner,
} from '../../webhooks/webhooks.js';
import { takeKeptForm } from '../../console/resume.js';
import { type ConsoleKit } from './kit.js';

const code = { code: (inner: string) => `<code>${inner}</code>` };

/** The operator's webhooks (`orgId` null), acting as the person in the console. */
const operatorOwner = (actor: Actor): WebhookOwner => ({ orgId: null, actor });
/** Reads need no actor: the owner is the operator's webhooks whoever reads them. */
const READ_OWNER: WebhookOwner = { orgId: null, actor: { type: 'system' } };

/** The form's event filters: one a line, or separated by commas or spaces. */
const eventList = (text: string | undefined) => (text ?? '').split(/[\s,]+/).filter((entry) => entry !== '');

function webhookForm(u: PageUi, values: Record<string, string>, error?: KeyplaneError): SafeHtml {
  const refusal = refusalNotice(error ? refusalText(u, error) : '');
  return html`<form method="post" action="/console/webhooks">
${refusal.region}<label for="wh-url">${u.t('console.webhooks.url')}</label>
<input id="wh-url" name="url" type="url" maxlength="2048" value="${values.url ?? ''}"${refusal.field({ first: true })}>
<label for="wh-events">${u.t('console.webhooks.events')}</label>
<textarea id="wh-events" name="events" rows="3" cols="40">${values.events ?? '*'}</textarea>
<label for="wh-description">${u.t('console.webhooks.description')}</label>
<input id="wh-description" name="description" type="text" maxlength="200" value="${values.description ?? ''}">
<button type="submit">${u.t('console.webhooks.create')}</button>
</form>`;
}

/**
 * Webhooks: the operator's (docs/events.md#webhooks) through the operations `/admin/webhooks`
 * uses: the list, create (the secret shown once), delete, the test button and the delivery log.
 */
export function webhooksSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, render, opened, operator, change, get, post } = c;
  const webhookRef = (request: FastifyRequest) => (request.params as { webhookId: string }).webhookId.slice(0, 100);

  async function listPage(
    request: FastifyRequest,
    reply: FastifyReply,
    shown: { form?: SafeHtml; notice?: SafeHtml; status?: number } = {},
  ) {
    const u = ui(request);
    const now = kp.now();
    const webhooks = await listWebhooks(kp, READ_OWNER);
    const kept =
      shown.form ??
      (operator(request)
        ? webhookForm(u, await takeKeptForm(kp, opened(request), (request.query as { resume?: unknown }).resume))
        : null);
    const body = html`${shown.notice ?? ''}${
      webhooks.length === 0
        ? html`<p>${u.t('console.webhooks.none')}</p>`
        : html`<table><thead><tr><th scope="col">${u.t('console.webhooks.url')}</th><th scope="col">${u.t('console.webhooks.events')}</th><th scope="col">${u.t('console.col.state')}</th><th scope="col">${u.t('console.col.created')}</th></tr></thead>
<tbody>${webhooks.map((w) => html`<tr><td><a href="/console/webhooks/${w.webhookId}"><code>${w.url}</code></a></td><td>${w.events.join(' ')}</td><td>${w.state}</td><td>${age(u, w.createdAt, now)}</td></tr>`)}</tbody></table>`
    }
${kept ? html`<h2>${u.t('console.webhooks.create_heading')}</h2>${kept}` : ''}`;
    return render(request, reply, u.t('console.nav.webhooks'), body, shown.status);
  }

  async function webhookPage(request: FastifyRequest, reply: FastifyReply, webhookId: string, notice?: SafeHtml) {
    const u = ui(request);
    const now = kp.now();
    const webhook = await ownedWebhook(kp, READ_OWNER, webhookId);
    const attempts = await webhookAttempts(kp, READ_OWNER, webhookId);
    const base = `/console/webhooks/${webhook.webhookId}`;
    const changes = operator(request)
      ? html`<h2>${u.t('console.changes')}</h2>
${webhook.state === 'active' ? actionButton(`${base}/test`, u.t('console.webhooks.test')) : ''}
${actionButton(`${base}/delete`, u.t('console.webhooks.delete'), { danger: true })}`
      : '';
    const body = html`${notice ?? ''}
<dl>
<dt>${u.t('console.webhooks.url')}</dt><dd><code>${webhook.url}</code></dd>
<dt>${u.t('console.webhooks.events')}</dt><dd>${webhook.events.join(' ')}</dd>
<dt>${u.t('console.webhooks.description')}</dt><dd>${webhook.description ?? ''}</dd>
<dt>${u.t('console.col.state')}</dt><dd>${webhook.state}</dd>
<dt>${u.t('console.col.created')}</dt><dd>${age(u, webhook.createdAt, now)}</dd>
</dl>
${changes}
<h2 id="deliveries-heading">${u.t('console.webhooks.deliveries')}</h2>
${
  attempts.length === 0
    ? html`<p>${u.t('console.webhooks.deliveries_none')}</p>`
    : html`<table aria-labelledby="deliveries-heading"><thead><tr><th scope="col">${u.t('console.receipts.at')}</th><th scope="col">${u.t('console.webhooks.delivery')}</th><th scope="col">${u.t('console.webhooks.attempt')}</th><th scope="col">${u.t('console.col.status')}</th></tr></thead>
<tbody>${attempts.map((a) => html`<tr data-delivery="${a.deliveryId}"><td>${age(u, a.at, now)}</td><td><code>${a.deliveryId}</code></td><td>${a.attempt}</td><td>${a.status === null ? (a.error ?? '') : String(a.status)}</td></tr>`)}</tbody></table>`
}
<p><a href="/console/webhooks">${u.t('console.nav.webhooks')}</a></p>`;
    return render(request, reply, webhook.description ?? webhook.url, body);
  }

  get('/console/webhooks', "The operator's webhooks, and the form that creates one", (request, reply) =>
    listPage(request, reply),
  );

  post(
    '/console/webhooks',
    'Create a webhook; its signing secret is shown once (operator, sensitive)',
    (request, reply) =>
      change(request, reply, '/console/webhooks', async (actor, fields) => {
        const u = ui(request);
        try {
          const made = await createWebhook(kp, operatorOwner(actor), {
            url: fields.url,
            events: eventList(fields.events),
            ...(fields.description ? { description: fields.description } : {}),
          });
          const secret = html`<p>${raw(u.rich('console.webhooks.secret_once', code, { secret: made.secret }))}</p>`;
          return webhookPage(
            request,
            reply,
            made.webhook.webhookId,
            doneNotice(u, u.t('console.webhooks.created'), made.receipt, secret),
          );
        } catch (error) {
          if (!(error instanceof KeyplaneError)) throw error;
          return listPage(request, reply, { form: webhookForm(u, fields, error), status: error.status });
        }
      }),
  );

  get('/console/webhooks/:webhookId', 'One webhook and its delivery log', (request, reply) =>
    webhookPage(request, reply, webhookRef(request)),
  );

  post(
    '/console/webhooks/:webhookId/test',
    'Send a test receipt to this webhook alone (operator, sensitive)',
    (request, reply) =>
      change(request, reply, `/console/webhooks/${encodeURIComponent(webhookRef(request))}`, async (actor) => {
        const u = ui(request);
        const { receipt } = await testWebhook(kp, operatorOwner(actor), webhookRef(request));
        return webhookPage(request, reply, webhookRef(request), doneNotice(u, u.t('console.webhooks.tested'), receipt));
      }),
  );

  post('/console/webhooks/:webhookId/delete', 'Delete a webhook (operator, sensitive)', (request, reply) =>
    change(request, reply, `/console/webhooks/${encodeURIComponent(webhookRef(request))}`, async (actor) => {
      const u = ui(request);
      const { receipt } = await deleteWebhook(kp, operatorOwner(actor), webhookRef(request));
      return listPage(request, reply, { notice: doneNotice(u, u.t('console.webhooks.deleted'), receipt) });
    }),
  );
}
