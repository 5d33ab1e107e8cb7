import type { Device, DeviceStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import { deviceFromRow, type DeviceRow } from '../rows.js';

export function sqliteDeviceStore(runner: Runner): DeviceStore {
  return {
    upsert: (identityId, deviceId, at, userAgent = null) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO devices (identity_id, device_id, created_at, last_seen_at, user_agent) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (identity_id, device_id) DO UPDATE SET last_seen_at = excluded.last_seen_at,
             user_agent = COALESCE(excluded.user_agent, devices.user_agent)`,
        ).run(identityId, deviceId, at, at, userAgent);
      }),
    list: (identityId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM devices WHERE identity_id = ? ORDER BY created_at, device_id').all(
            identityId,
          ) as DeviceRow[]
        ).map((row): Device => deviceFromRow(row)),
      ),
    remove: (identityId, deviceId) =>
      runner.run(
        (db) =>
          cached(db, 'DELETE FROM devices WHERE identity_id = ? AND device_id = ?').run(identityId, deviceId)
            .changes === 1,
      ),
  };
}
