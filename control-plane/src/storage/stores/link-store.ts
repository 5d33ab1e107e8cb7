import type { LinkStore, StoredLink } from '../interface.js';
import { changedOne, firstRow, insertOf, type Sql } from '../sql.js';

interface LinkRow {
  token_hash: string;
  purpose: string;
  identity_id: string;
  email_id: string;
  device_id: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

type EnrolmentRow = Omit<LinkRow, 'purpose' | 'device_id'>;

const linkToRow = (l: StoredLink): LinkRow => ({
  token_hash: l.tokenHash,
  purpose: l.purpose,
  identity_id: l.identityId,
  email_id: l.emailId,
  device_id: l.deviceId,
  created_at: l.createdAt,
  expires_at: l.expiresAt,
  used_at: l.usedAt,
});

const linkFromRow = (row: LinkRow): StoredLink => ({
  tokenHash: row.token_hash,
  purpose: row.purpose as StoredLink['purpose'],
  identityId: row.identity_id,
  emailId: row.email_id,
  deviceId: row.device_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  usedAt: row.used_at,
});

export function linkStore(sql: Sql): LinkStore {
  return {
    insert: async (record) => {
      await sql.count(...insertOf('one_time_links', linkToRow({ ...record, usedAt: null })));
    },
    find: (tokenHash) => firstRow(sql, 'SELECT * FROM one_time_links WHERE token_hash = $1', [tokenHash], linkFromRow),
    consume: (tokenHash, at) =>
      changedOne(
        sql,
        'UPDATE one_time_links SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2',
        [tokenHash, at],
      ),
    purgeExpired: async (before) =>
      (await sql.count('DELETE FROM one_time_links WHERE expires_at < $1', [before])) +
      (await sql.count('DELETE FROM enrolment_links WHERE expires_at < $1', [before])),
    insertEnrolment: async (record) => {
      const { purpose: _purpose, device_id: _device, ...row } = linkToRow({ ...record, usedAt: null });
      await sql.count(...insertOf('enrolment_links', row));
    },
    findEnrolment: (tokenHash) =>
      firstRow(sql, 'SELECT * FROM enrolment_links WHERE token_hash = $1', [tokenHash], (row: EnrolmentRow) =>
        linkFromRow({ ...row, purpose: 'enrol_passkey', device_id: null }),
      ),
    consumeEnrolment: (tokenHash, at) =>
      changedOne(
        sql,
        'UPDATE enrolment_links SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2',
        [tokenHash, at],
      ),
    revokeEnrolments: (identityId) =>
      sql.count('DELETE FROM enrolment_links WHERE identity_id = $1 AND used_at IS NULL', [identityId]),
    hasLiveEnrolment: async (identityId, at) =>
      (await sql.row(
        'SELECT 1 AS live FROM enrolment_links WHERE identity_id = $1 AND used_at IS NULL AND expires_at > $2 LIMIT 1',
        [identityId, at],
      )) !== undefined,
  };
}
