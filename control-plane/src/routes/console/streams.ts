import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html, type SafeHtml } from '../../pages/layout.js';
import { actionButton, age, doneNotice, nextLink } from '../../pages/console-views.js';
import { deleteStreamAsOperator, listStreamsPage, setStreamStatusAsOperator } from '../../ssf/streams.js';
import { PAGE_SIZE } from '../../console/views.js';
import { type ConsoleKit } from './kit.js';

/** An event type URI by its last segment (`session-revoked`); the full URI stays in its title. */
const eventName = (uri: string) => uri.slice(uri.lastIndexOf('/') + 1);

/**
 * Shared Signals streams (docs/events.md#shared-signals-streams-from-a-receivers-view): every receiver's streams a
 * page at a time, with the receiver's client, delivery, status and the events it asked for. An
 * operator may disable or delete one through the transmitter's own operations; the receipt names
 * the operator.
 */
export function streamsSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, render, operator, change, get, post } = c;

  async function listPage(request: FastifyRequest, reply: FastifyReply, notice?: SafeHtml) {
    const u = ui(request);
    const now = kp.now();
    const after = (request.query as { after?: unknown }).after;
    const { streams, next } = await listStreamsPage(
      kp,
      typeof after === 'string' ? after.slice(0, 100) : null,
      PAGE_SIZE,
    );
    const changes = operator(request);
    const body = html`${notice ?? ''}${
      streams.length === 0
        ? html`<p>${u.t('console.streams.none')}</p>`
        : html`<table><thead><tr><th scope="col">${u.t('console.streams.stream')}</th><th scope="col">${u.t('console.streams.receiver')}</th><th scope="col">${u.t('console.streams.delivery')}</th><th scope="col">${u.t('console.col.status')}</th><th scope="col">${u.t('console.streams.events')}</th><th scope="col">${u.t('console.col.created')}</th>${changes ? html`<th scope="col">${u.t('console.changes')}</th>` : ''}</tr></thead>
<tbody>${streams.map(
            (s) =>
              html`<tr data-stream="${s.streamId}"><td><code>${s.streamId}</code>${s.description ? html` ${s.description}` : ''}</td><td><a href="/console/clients/${s.clientId}"><code>${s.clientId}</code></a></td><td>${s.delivery}${s.endpointUrl ? html` <code>${s.endpointUrl}</code>` : ''}</td><td>${s.status}${s.statusReason ? html` (${s.statusReason})` : ''}</td><td>${s.eventsRequested.map((uri) => html`<span title="${uri}">${eventName(uri)}</span> `)}</td><td>${age(u, s.createdAt, now)}</td>${
                changes
                  ? html`<td>${s.status === 'disabled' ? '' : actionButton(`/console/streams/${s.streamId}/disable`, u.t('console.streams.disable', { stream: s.streamId }))}${actionButton(`/console/streams/${s.streamId}/delete`, u.t('console.streams.delete', { stream: s.streamId }), { danger: true })}</td>`
                  : ''
              }</tr>`,
          )}</tbody></table>`
    }
${nextLink(u, '/console/streams', {}, next)}`;
    return render(request, reply, u.t('console.nav.streams'), body);
  }

  const streamRef = (request: FastifyRequest) => (request.params as { streamId: string }).streamId.slice(0, 100);

  get('/console/streams', "Every receiver's Shared Signals streams, a page at a time", (request, reply) =>
    listPage(request, reply),
  );

  post(
    '/console/streams/:streamId/disable',
    'Disable a Shared Signals stream: nothing more is sent to it (operator, sensitive)',
    (request, reply) =>
      change(request, reply, '/console/streams', async (actor) => {
        const { receipt } = await setStreamStatusAsOperator(kp, streamRef(request), 'disabled', actor);
        return listPage(request, reply, doneNotice(ui(request), ui(request).t('console.streams.disabled'), receipt));
      }),
  );

  post(
    '/console/streams/:streamId/delete',
    'Delete a Shared Signals stream with its subjects and undelivered events (operator, sensitive)',
    (request, reply) =>
      change(request, reply, '/console/streams', async (actor) => {
        const { receipt } = await deleteStreamAsOperator(kp, streamRef(request), actor);
        return listPage(request, reply, doneNotice(ui(request), ui(request).t('console.streams.deleted'), receipt));
      }),
  );
}
