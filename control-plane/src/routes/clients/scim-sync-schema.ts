import { okObject } from '../../http/schemas.js';

const nullable = (type: string) => ({ type: [type, 'null'] });

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
