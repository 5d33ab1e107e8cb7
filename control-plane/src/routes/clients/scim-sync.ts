import { okObject } from '../../http/schemas.js';
import { html, type SafeHtml } from '../../pages/layout.js';
import type { PageUi } from '../../pages/ui.js';
import type { ScimSyncState } from '../../scim/push-queue.js';

const nullable = (type: string) => ({ type: [type, 'null'] });

/** The owner's and the console's view of a client's outbound SCIM sync (docs/scim.md#outbound-scim). */

/** `{ok, base_url, last_sync, pending, failures}`: a client's outbound SCIM sync state (scim/push.ts `scimSyncState`). */
export const scimSyncSchema = okObject(
  {
    base_url: { type: 'string' },
    last_sync: { ...nullable('string'), description: 'When a push last succeeded (ISO 8601); null before the first.' },
    pending: { type: 'integer', description: 'Users and groups waiting to be pushed.' },
    failures: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          resource: { enum: ['user', 'group', 'reconcile'] },
          id: { type: 'string', description: 'The identity id or team id (the client id for reconcile).' },
          state: { enum: ['pending', 'dead'] },
          attempts: { type: 'integer' },
          last_status: nullable('integer'),
          last_error: nullable('string'),
          next_attempt_at: nullable('string'),
        },
      },
    },
  },
  ['base_url', 'last_sync', 'pending', 'failures'],
);

/** A client's outbound SCIM state in a line (docs/scim.md#outbound-scim); nothing without a SCIM server. */
export function scimLine(ui: PageUi, sync: ScimSyncState | undefined): SafeHtml | string {
  if (!sync) return '';
  const line = ui.t('apps.scim.state', {
    url: sync.base_url,
    time: sync.last_sync ?? ui.t('apps.scim.never'),
    pending: String(sync.pending),
    failures: String(sync.failures.length),
  });
  return html`<p class="muted" data-scim-sync="${sync.failures.length ? 'failing' : 'ok'}">${line}</p>`;
}
