import type { ConnectionStore, StoredConnection } from '../interface.js';
import { changedOne, firstRow, insertOf, type Sql } from '../sql.js';
import { liveAt } from './session-store.js';

interface ConnectionRow {
  connection_id: string;
  org_id: string | null;
  type: StoredConnection['type'];
  name: string;
  settings: string;
  secret_sealed: Buffer | null;
  domains: string;
  jit: string | null;
  required: number;
  max_assurance: StoredConnection['maxAssurance'];
  session_max_hours: number;
  created_at: number;
  updated_at: number;
}

const toRow = (c: StoredConnection): ConnectionRow => ({
  connection_id: c.connectionId,
  org_id: c.orgId,
  type: c.type,
  name: c.name,
  settings: JSON.stringify(c.settings),
  secret_sealed: c.secretSealed,
  domains: JSON.stringify(c.domains),
  jit: c.jit === null ? null : JSON.stringify(c.jit),
  required: c.required ? 1 : 0,
  max_assurance: c.maxAssurance,
  session_max_hours: c.sessionMaxHours,
  created_at: c.createdAt,
  updated_at: c.updatedAt,
});

const fromRow = (row: ConnectionRow): StoredConnection => ({
  connectionId: row.connection_id,
  orgId: row.org_id,
  type: row.type,
  name: row.name,
  settings: JSON.parse(row.settings) as Record<string, unknown>,
  secretSealed: row.secret_sealed === null ? null : Buffer.from(row.secret_sealed),
  domains: JSON.parse(row.domains) as string[],
  jit: row.jit === null ? null : (JSON.parse(row.jit) as StoredConnection['jit']),
  required: Number(row.required) === 1,
  maxAssurance: row.max_assurance,
  sessionMaxHours: Number(row.session_max_hours),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

const COLUMNS = `connection_id, org_id, type, name, settings, secret_sealed, domains, jit, required, max_assurance,
  session_max_hours, created_at, updated_at`;

export function connectionStore(sql: Sql): ConnectionStore {
  return {
    insert: async (connection) => {
      await sql.count(...insertOf('connections', toRow(connection)));
    },
    get: (connectionId) =>
      firstRow(sql, `SELECT ${COLUMNS} FROM connections WHERE connection_id = $1`, [connectionId], fromRow),
    list: async (orgId) =>
      (
        await sql.rows<ConnectionRow>(
          orgId === null
            ? `SELECT ${COLUMNS} FROM connections WHERE org_id IS NULL ORDER BY created_at, connection_id`
            : `SELECT ${COLUMNS} FROM connections WHERE org_id = $1 ORDER BY created_at, connection_id`,
          orgId === null ? [] : [orgId],
        )
      ).map(fromRow),
    forDomain: async (domain) => {
      // Few connections name domains: they are read and matched here rather than indexed as JSON.
      const rows = await sql.rows<ConnectionRow>(
        `SELECT ${COLUMNS} FROM connections WHERE org_id IS NOT NULL AND domains <> '[]' ORDER BY created_at, connection_id`,
      );
      return rows.map(fromRow).find((c) => c.domains.includes(domain)) ?? null;
    },
    update: async (c) => {
      const row = toRow(c);
      await sql.count(
        `UPDATE connections SET name = $2, settings = $3, secret_sealed = $4, domains = $5, jit = $6, required = $7,
           max_assurance = $8, session_max_hours = $9, updated_at = $10 WHERE connection_id = $1`,
        [
          row.connection_id,
          row.name,
          row.settings,
          row.secret_sealed,
          row.domains,
          row.jit,
          row.required,
          row.max_assurance,
          row.session_max_hours,
          row.updated_at,
        ],
      );
    },
    remove: async (connectionId) => {
      await sql.count('DELETE FROM federated_identities WHERE connection_id = $1', [connectionId]);
      await sql.count('DELETE FROM federated_sessions WHERE connection_id = $1', [connectionId]);
      return changedOne(sql, 'DELETE FROM connections WHERE connection_id = $1', [connectionId]);
    },
    findIdentity: async (connectionId, subjectHash) =>
      (
        await sql.row<{ identity_id: string }>(
          'SELECT identity_id FROM federated_identities WHERE connection_id = $1 AND subject_hash = $2',
          [connectionId, subjectHash],
        )
      )?.identity_id ?? null,
    link: async (connectionId, subjectHash, identityId, at) =>
      (await sql.count(
        ...insertOf(
          'federated_identities',
          {
            connection_id: connectionId,
            subject_hash: subjectHash,
            identity_id: identityId,
            created_at: at,
            last_sign_in_at: at,
          },
          'ON CONFLICT (connection_id, subject_hash) DO NOTHING',
        ),
      )) === 1,
    isLinked: async (connectionId, identityId) =>
      (await sql.row<{ one: number }>(
        'SELECT 1 AS one FROM federated_identities WHERE connection_id = $1 AND identity_id = $2 LIMIT 1',
        [connectionId, identityId],
      )) !== undefined,
    linksOf: async (identityId) =>
      (
        await sql.rows<{ connection_id: string; created_at: number }>(
          `SELECT connection_id, MIN(created_at) AS created_at FROM federated_identities WHERE identity_id = $1
           GROUP BY connection_id ORDER BY MIN(created_at), connection_id`,
          [identityId],
        )
      ).map((r) => ({ connectionId: r.connection_id, linkedAt: Number(r.created_at) })),
    unlink: async (connectionId, identityId) =>
      (await sql.count('DELETE FROM federated_identities WHERE connection_id = $1 AND identity_id = $2', [
        connectionId,
        identityId,
      ])) > 0,
    markSession: async (sessionId, connectionId, at, upstream) => {
      await sql.count(
        ...insertOf(
          'federated_sessions',
          {
            session_id: sessionId,
            connection_id: connectionId,
            signed_in_at: at,
            upstream_sid_hash: upstream?.sidHash ?? null,
            upstream_sub_hash: upstream?.subHash ?? null,
            id_token_sealed: upstream?.idTokenSealed ?? null,
          },
          `ON CONFLICT (session_id) DO UPDATE SET connection_id = excluded.connection_id, signed_in_at = excluded.signed_in_at,
            upstream_sid_hash = excluded.upstream_sid_hash, upstream_sub_hash = excluded.upstream_sub_hash,
            id_token_sealed = excluded.id_token_sealed`,
        ),
      );
    },
    sessionUpstream: async (sessionId) => {
      const row = await sql.row<{
        connection_id: string;
        upstream_sid_hash: string | null;
        upstream_sub_hash: string | null;
        id_token_sealed: Buffer | null;
      }>(
        'SELECT connection_id, upstream_sid_hash, upstream_sub_hash, id_token_sealed FROM federated_sessions WHERE session_id = $1',
        [sessionId],
      );
      return row
        ? {
            connectionId: row.connection_id,
            sidHash: row.upstream_sid_hash,
            subHash: row.upstream_sub_hash,
            idTokenSealed: row.id_token_sealed === null ? null : Buffer.from(row.id_token_sealed),
          }
        : null;
    },
    sessionsOfUpstream: async (connectionId, by, now) => {
      const [column, value] =
        by.sidHash !== undefined ? ['upstream_sid_hash', by.sidHash] : ['upstream_sub_hash', by.subHash];
      if (value === undefined) return [];
      const rows = await sql.rows<{ session_id: string; identity_id: string }>(
        `SELECT f.session_id, s.identity_id FROM federated_sessions f JOIN sessions s ON s.session_id = f.session_id
          WHERE f.connection_id = $1 AND f.${column} = $2 AND ${liveAt('$3')}
          ORDER BY f.session_id`,
        [connectionId, value, now],
      );
      return rows.map((r) => ({ sessionId: r.session_id, identityId: r.identity_id }));
    },
    sessionConnection: async (sessionId) =>
      (
        await sql.row<{ connection_id: string }>('SELECT connection_id FROM federated_sessions WHERE session_id = $1', [
          sessionId,
        ])
      )?.connection_id ?? null,
    sessionSignIn: async (sessionId) => {
      const row = await sql.row<{ connection_id: string; signed_in_at: number }>(
        'SELECT connection_id, signed_in_at FROM federated_sessions WHERE session_id = $1',
        [sessionId],
      );
      return row ? { connectionId: row.connection_id, signedInAt: Number(row.signed_in_at) } : null;
    },
  };
}
