import type { Device, DeviceStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import { type DeviceRow } from '../rows.js';

export function sqliteDeviceStore(runner: Runner): DeviceStore {
  return {
    upsert: (identityId, deviceId, at) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO devices (identity_id, device_id, created_at, last_seen_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (identity_id, device_id) DO UPDATE SET last_seen_at = excluded.last_seen_at`,
        ).run(identityId, deviceId, at, at);
      }),
    list: (identityId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM devices WHERE identity_id = ? ORDER BY created_at, device_id').all(
            identityId,
          ) as DeviceRow[]
        ).map((row): Device => ({
          deviceId: row.device_id,
          identityId: row.identity_id,
          createdAt: row.created_at,
          lastSeenAt: row.last_seen_at,
        })),
      ),
    remove: (identityId, deviceId) =>
      runner.run(
        (db) =>
          cached(db, 'DELETE FROM devices WHERE identity_id = ? AND device_id = ?').run(identityId, deviceId)
            .changes === 1,
      ),
  };
}
