import { deviceFromRow, type DeviceRow } from '../rows.js';
import type { DeviceStore } from '../types.js';
import type { Sql } from './sql.js';

export function postgresDeviceStore(sql: Sql): DeviceStore {
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
    remove: async (identityId, deviceId) =>
      (await sql.count('DELETE FROM devices WHERE identity_id = $1 AND device_id = $2', [identityId, deviceId])) === 1,
  };
}
