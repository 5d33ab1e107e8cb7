import { html, type SafeHtml } from './layout.js';

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

const REASON_TEXT: Record<string, string> = {
  not_registered: 'no client registered yet',
  no_gateway: 'no gateway policy to observe',
  no_evidence: 'no gateway has reported',
  evidence_expired: 'the last evidence has expired',
  failing_closed: 'a gateway holds no valid config',
  config_mismatch: 'a gateway runs another config',
  observing: 'the gateway only observes',
  canary: 'enforced for a canary share only',
  enforcing_declared_config: 'fresh evidence matches the declared config',
};

/** Only a verified state gets colour; every other state reads as plain text (colour never carries meaning alone). */
const PAGE_STYLE = `
main { max-width: 72rem; }
td.status-enforced { color: #0b6b2e; font-weight: 700; }
@media (prefers-color-scheme: dark) { td.status-enforced { color: #7fd69b; } }
caption { text-align: left; font-weight: 600; padding: .5rem 0; }
`;

function age(seconds: number | null): string {
  if (seconds === null) return 'never';
  if (seconds < 120) return `${seconds} s ago`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3600)} h ago`;
}

function declaredMode(row: RolloutRow): string {
  if (row.declared.mode === null) return 'none';
  return row.declared.mode === 'canary' ? `canary ${row.declared.canary_percent ?? 0} %` : row.declared.mode;
}

/** `/rollout` as a table: declared columns, then observed ones, then the verdict in words. */
export function rolloutTable(rows: RolloutRow[], nonce: string): SafeHtml {
  return html`<style nonce="${nonce}">${PAGE_STYLE}</style>
<h1>Rollout</h1>
<p class="muted">Declared intent and live observation side by side. A project is <strong>enforced</strong> only while its gateways
report fresh signed evidence of exactly the declared config; anything else is unverified, stale or a mismatch.</p>
${
  rows.length === 0
    ? html`<p>No project has a trust profile yet. Start with <code>keyplane rollout classify FILE</code>.</p>`
    : html`
<table data-rollout>
<caption>Projects (${rows.length})</caption>
<thead>
<tr><th scope="col">Project</th><th scope="col">Stage</th><th scope="col">Declared: profile</th><th scope="col">Declared: policy</th>
<th scope="col">Observed: evidence</th><th scope="col">Observed: config</th><th scope="col">Status</th></tr>
</thead>
<tbody>
${rows.map(
  (row) => html`<tr data-project="${row.project}">
<th scope="row">${row.project}<br><code class="muted">${row.client_id ?? 'not registered'}</code></th>
<td>${row.stage}</td>
<td>v${row.declared.profile_version}, ${row.declared.exposure}, at least ${row.declared.required_assurance}</td>
<td>${declaredMode(row)}${row.declared.config_version !== null ? html` (config v${row.declared.config_version})` : ''}</td>
<td>${row.observed.fresh_instances} of ${row.observed.instances} fresh, last ${age(row.observed.age_seconds)}</td>
<td>${row.observed.config_version !== null ? `v${row.observed.config_version} ${row.observed.mode ?? ''}` : 'none'}</td>
<td class="status-${row.status}" data-status="${row.status}">${row.status}<br><span class="muted">${REASON_TEXT[row.reason] ?? row.reason}</span></td>
</tr>`,
)}
</tbody>
</table>`
}`;
}
