import type { DeviceStore } from '../interface.js';
import { changedOne, type Sql } from '../sql.js';

interface DeviceRow {
  identity_id: string;
  device_id: string;
  created_at: number;
  last_seen_at: number;
  user_agent: string | null;
}

const deviceFromRow = (row: DeviceRow) => ({
  deviceId: row.device_id,
  identityId: row.identity_id,
  createdAt: row.created_at,
  lastSeenAt: row.last_seen_at,
  userAgent: row.user_agent,
});

export function deviceStore(sql: Sql): DeviceStore {
  return {
    upsert: async (identityId, deviceId, at, userAgent = null) => {
      await sql.count(
        `INSERT INTO devices (identity_id, device_id, created_at, last_seen_at, user_agent) VALUES ($1, $2, $3, $3, $4)
         ON CONFLICT (identity_id, device_id) DO UPDATE SET last_seen_at = excluded.last_seen_at,
           user_agent = COALESCE(excluded.user_agent, devices.user_agent)`,
        [identityId, deviceId, at, userAgent],
      );
    },
    list: async (identityId) =>
      (
        await sql.rows<DeviceRow>('SELECT * FROM devices WHERE identity_id = $1 ORDER BY created_at, device_id', [
          identityId,
        ])
      ).map(deviceFromRow),
    remove: (identityId, deviceId) =>
      changedOne(sql, 'DELETE FROM devices WHERE identity_id = $1 AND device_id = $2', [identityId, deviceId]),
  };
}
