import type { MessageKey } from '#lib/i18n/translate.js';
import { html, raw, type SafeHtml } from './layout.js';
import type { PageUi } from './ui.js';

export interface RolloutRow {
  project: string;
  client_id: string | null;
  stage: string;
  declared: {
    profile_version: number;
    required_assurance: string;
    exposure: string;
    mode: string | null;
    canary_percent: number | null;
    config_version: number | null;
  };
  observed: {
    instances: number;
    fresh_instances: number;
    age_seconds: number | null;
    config_version: number | null;
    mode: string | null;
  };
  status: string;
  reason: string;
}

const REASON_TEXT: Record<string, MessageKey> = {
  not_registered: 'rollout.reason.not_registered',
  no_gateway: 'rollout.reason.no_gateway',
  no_evidence: 'rollout.reason.no_evidence',
  evidence_expired: 'rollout.reason.evidence_expired',
  failing_closed: 'rollout.reason.failing_closed',
  config_mismatch: 'rollout.reason.config_mismatch',
  observing: 'rollout.reason.observing',
  canary: 'rollout.reason.canary',
  enforcing_declared_config: 'rollout.reason.enforcing_declared_config',
};

const STATUS_TEXT: Record<string, MessageKey> = {
  enforced: 'rollout.status.enforced',
  unverified: 'rollout.status.unverified',
  stale: 'rollout.status.stale',
  mismatch: 'rollout.status.mismatch',
};

const STAGE_TEXT: Record<string, MessageKey> = {
  classified: 'rollout.stage.classified',
  registered: 'rollout.stage.registered',
  verified: 'rollout.stage.verified',
  canary: 'rollout.stage.canary',
  attested: 'rollout.stage.attested',
};

/** Only a verified state gets colour; every other state reads as plain text (colour never carries meaning alone). */
const PAGE_STYLE = `
main { max-width: 72rem; }
td.status-enforced { color: #0b6b2e; font-weight: 700; }
@media (prefers-color-scheme: dark) { td.status-enforced { color: #7fd69b; } }
caption { text-align: start; font-weight: 600; padding: .5rem 0; }
`;

function age(ui: PageUi, seconds: number | null): string {
  if (seconds === null) return ui.t('rollout.age.never');
  if (seconds < 120) return ui.t('rollout.age.seconds', { seconds });
  if (seconds < 7200) return ui.t('rollout.age.minutes', { minutes: Math.round(seconds / 60) });
  return ui.t('rollout.age.hours', { hours: Math.round(seconds / 3600) });
}

function declaredMode(ui: PageUi, row: RolloutRow): SafeHtml | string {
  if (row.declared.mode === null) return ui.t('rollout.none');
  return row.declared.mode === 'canary'
    ? ui.t('rollout.canary_percent', { percent: row.declared.canary_percent ?? 0 })
    : html`<code>${row.declared.mode}</code>`;
}

/** `/rollout` as a table: declared columns, then observed ones, then the verdict in words. */
export function rolloutTable(ui: PageUi, rows: RolloutRow[], nonce: string): SafeHtml {
  const t = ui.t;
  const code = { code: (inner: string) => `<code>${inner}</code>` };
  return html`<style nonce="${nonce}">${PAGE_STYLE}</style>
<h1>${t('rollout.title')}</h1>
<p class="muted">${raw(ui.rich('rollout.intro', { strong: (inner) => `<strong>${inner}</strong>` }))}</p>
${
  rows.length === 0
    ? html`<p>${raw(ui.rich('rollout.empty', code, { command: 'keyplane rollout classify FILE' }))}</p>`
    : html`
<table data-rollout>
<caption>${t('rollout.caption', { count: rows.length })}</caption>
<thead>
<tr><th scope="col">${t('rollout.col.project')}</th><th scope="col">${t('rollout.col.stage')}</th><th scope="col">${t('rollout.col.declared_profile')}</th><th scope="col">${t('rollout.col.declared_policy')}</th>
<th scope="col">${t('rollout.col.observed_evidence')}</th><th scope="col">${t('rollout.col.observed_config')}</th><th scope="col">${t('rollout.col.status')}</th></tr>
</thead>
<tbody>
${rows.map(
  (row) => html`<tr data-project="${row.project}">
<th scope="row">${row.project}<br><code class="muted">${row.client_id ?? t('rollout.not_registered')}</code></th>
<td>${STAGE_TEXT[row.stage] ? t(STAGE_TEXT[row.stage]!) : row.stage}</td>
<td>${raw(ui.rich('rollout.declared_profile', code, { version: row.declared.profile_version, exposure: row.declared.exposure, assurance: row.declared.required_assurance }))}</td>
<td>${declaredMode(ui, row)}${row.declared.config_version !== null ? ` ${t('rollout.config_version', { version: row.declared.config_version })}` : ''}</td>
<td>${t('rollout.observed_evidence', { fresh: row.observed.fresh_instances, instances: row.observed.instances, age: age(ui, row.observed.age_seconds) })}</td>
<td>${row.observed.config_version !== null ? html`v${row.observed.config_version} <code>${row.observed.mode ?? ''}</code>` : t('rollout.none')}</td>
<td class="status-${row.status}" data-status="${row.status}">${STATUS_TEXT[row.status] ? t(STATUS_TEXT[row.status]!) : row.status}<br><span class="muted">${REASON_TEXT[row.reason] ? t(REASON_TEXT[row.reason]!) : row.reason}</span></td>
</tr>`,
)}
</tbody>
</table>`
}`;
}
