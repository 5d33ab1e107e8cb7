import type { FastifyInstance } from 'fastify';
import { KeyplaneError } from '#lib/errors/keyplane-error.js';
import { html, raw, type SafeHtml } from '../../pages/layout.js';
import { refusalText } from '../../pages/link-pages.js';
import { consolePage, nextLink, refusalNotice } from '../../pages/console-views.js';
import { lookUpReceipt } from '../../ledger/proofs.js';
import { exportReceipts, type ExportQuery } from '../../ledger/export.js';
import type { PageUi } from '../../pages/ui.js';
import { type ConsoleKit, html200 } from './kit.js';

const SEARCH_FIELDS = ['type', 'subject', 'since', 'until'] as const;
const LABELS = {
  type: 'console.receipts.type',
  subject: 'console.receipts.subject',
  since: 'console.receipts.since',
  until: 'console.receipts.until',
} as const;

/** The search form's fields as sent: text, trimmed and capped; empty ones left out. */
function searchFields(query: Record<string, unknown>): Partial<Record<(typeof SEARCH_FIELDS)[number], string>> {
  const fields: Partial<Record<(typeof SEARCH_FIELDS)[number], string>> = {};
  for (const name of SEARCH_FIELDS) {
    const value = query[name];
    if (typeof value === 'string' && value.trim() !== '') fields[name] = value.trim().slice(0, 200);
  }
  return fields;
}

/** A `datetime-local` value has no zone: the form says UTC, so it is read as UTC. */
const utc = (value: string | undefined) =>
  value !== undefined && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(value) ? `${value}Z` : value;

/**
 * The search: the same query as the audit export (`GET /admin/receipts`, docs/events.md#audit-export),
 * a page at a time in ledger order; a refused query comes back with the reason and the input kept.
 */
async function searchSection(kp: ConsoleKit['kp'], u: PageUi, query: Record<string, unknown>): Promise<SafeHtml> {
  const fields = searchFields(query);
  const after = typeof query.after === 'string' ? query.after.slice(0, 20) : undefined;
  const wanted: ExportQuery = { limit: 50 };
  if (fields.type) wanted.type = fields.type;
  if (fields.subject) wanted.subject = fields.subject;
  if (fields.since) wanted.since = utc(fields.since)!;
  if (fields.until) wanted.until = utc(fields.until)!;
  if (after) wanted.after = after;
  let results: SafeHtml;
  let refusal: SafeHtml | string = '';
  try {
    const page = await exportReceipts(kp, wanted);
    const exportQuery = new URLSearchParams(Object.entries(wanted).filter(([k]) => k !== 'limit' && k !== 'after'));
    results =
      page.receipts.length === 0
        ? html`<p>${u.t('console.receipts.none')}</p>`
        : html`<table aria-labelledby="found-heading"><thead><tr><th scope="col">${u.t('console.receipts.at')}</th><th scope="col">${u.t('console.receipts.type')}</th><th scope="col">${u.t('console.receipts.actor')}</th><th scope="col">${u.t('console.receipts.hash_col')}</th></tr></thead>
<tbody>${page.receipts.map(({ hash, receipt }) => {
            const actor = (receipt as { actor?: { type: string; id?: string } }).actor;
            return html`<tr><td>${String(receipt.at)}</td><td>${receipt.kind}</td><td>${actor ? `${actor.type}${actor.id ? ` ${actor.id}` : ''}` : ''}</td><td><a href="/console/receipts?hash=${hash}"><code>${hash.slice(0, 16)}</code></a></td></tr>`;
          })}</tbody></table>
${nextLink(u, '/console/receipts', fields, page.next)}
<p><a href="/admin/receipts?${exportQuery.toString()}" download="receipts.json">${u.t('console.receipts.export')}</a></p>`;
  } catch (error) {
    if (!(error instanceof KeyplaneError)) throw error;
    refusal = refusalText(u, error);
    results = html``;
  }
  const shown = refusalNotice(refusal);
  const input = (name: (typeof SEARCH_FIELDS)[number], type: string, max: number) =>
    html`<label for="r-${name}">${u.t(LABELS[name])}</label>
<input id="r-${name}" name="${name}" type="${type}" maxlength="${String(max)}" value="${fields[name] ?? ''}"${shown.field()}>`;
  return html`<form method="get" action="/console/receipts" role="search" aria-label="${u.t('console.receipts.search_heading')}">
${shown.region}${input('type', 'text', 100)}
${input('subject', 'text', 200)}
${input('since', 'datetime-local', 40)}
${input('until', 'datetime-local', 40)}
<button type="submit" class="secondary">${u.t('console.search')}</button>
</form>
<h2 id="found-heading">${u.t('console.receipts.found')}</h2>
${results}`;
}

/** Receipts: a search by type, any id and time; one receipt with its inclusion proof, checked in the page. */
export function receiptsSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, opened, get } = c;
  get(
    '/console/receipts',
    "Receipts by type, any id and time (the audit export's query); one by its hash, its inclusion proof checked in the page",
    async (request, reply) => {
      const u = ui(request);
      const hash = (request.query as { hash?: unknown }).hash;
      const wanted = typeof hash === 'string' ? hash.trim().toLowerCase().slice(0, 64) : '';
      let shown: SafeHtml = html``;
      let scripts: string[] | undefined;
      if (wanted) {
        try {
          const found = await lookUpReceipt(kp, wanted);
          const json = JSON.stringify({ hash: wanted, ...found }).replace(/</g, '\\u003c');
          scripts = 'pending' in found ? undefined : ['/assets/console.js'];
          shown = html`<h2>${u.t('console.receipts.one')}</h2>
<pre><code>${JSON.stringify(found.receipt, null, 2)}</code></pre>
${
  'pending' in found
    ? html`<p>${u.t('console.receipts.pending')}</p>`
    : html`<p>${u.t('console.receipts.epoch', { epoch: found.proof.epoch, index: found.proof.index, size: found.proof.size })}</p>
<p class="muted">${u.t('console.receipts.consistency')}</p>
<button type="button" id="verify-proof" data-action="verify-proof">${u.t('console.receipts.check')}</button>
<p id="proof-status" role="status" aria-live="polite"></p>
<script type="application/json" id="receipt-proof" nonce="${request.kp.cspNonce}">${raw(json)}</script>`
}`;
        } catch (error) {
          if (!(error instanceof KeyplaneError)) throw error;
          shown = html`<p role="alert" class="error">${refusalText(u, error)}</p>`;
        }
      }
      const search = wanted ? html`` : await searchSection(kp, u, request.query as Record<string, unknown>);
      const body = html`${search}
<form method="get" action="/console/receipts" role="search" aria-label="${u.t('console.receipts.hash')}">
<label for="hash">${u.t('console.receipts.hash')}</label>
<input id="hash" name="hash" type="search" value="${wanted}" maxlength="64" pattern="[0-9a-fA-F]{64}">
<button type="submit" class="secondary">${u.t('console.search')}</button>
</form>
${shown}`;
      reply.type(html200);
      return consolePage(u, {
        title: u.t('console.nav.receipts'),
        nonce: request.kp.cspNonce,
        session: opened(request),
        body,
        ...(scripts
          ? { scripts, scriptLines: { proofOk: u.t('console.receipts.ok'), proofBad: u.t('console.receipts.bad') } }
          : {}),
      });
    },
  );
}
