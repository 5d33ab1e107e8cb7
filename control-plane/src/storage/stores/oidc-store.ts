import type { CodeConsumption, OidcStore, RefreshConsumption } from '../interface.js';
import { changedOne, columnOf, firstRow, insertOf, type SpendStatement, type Sql } from '../sql.js';
import {
  REFRESH_GRANT_COLUMNS,
  approvalFromRow,
  codeFromRow,
  codeToRow,
  grantFromRow,
  grantToRow,
  refreshFromRow,
  refreshGrantFromRow,
  refreshToRow,
  type CodeRow,
  type GrantRow,
  type RefreshRow,
} from './oidc-rows.js';

/**
 * Spends a one-time row: the conditional UPDATE marks it for exactly one caller (a concurrent
 * one waits for the row lock, re-reads the committed row and matches nothing); everyone else
 * gets the row as it stood. On PostgreSQL `spent` and `answer` are one statement (a CTE), and
 * `spendWith` (postgres/sql.ts) puts writes between them that land only with the spend. SQLite
 * has no UPDATE in a CTE: it runs `update`, then `read` when that matched nothing; its one
 * writer makes the pair as safe.
 */
const spendOnce = (table: string, key: string, column: string, also = '') => {
  const update = `UPDATE ${table} SET ${column} = $2${also} WHERE ${key} = $1 AND ${column} IS NULL RETURNING *`;
  const statement: SpendStatement = {
    spent: `spent AS (${update})`,
    answer: `SELECT true AS fresh, * FROM spent
  UNION ALL
  SELECT false AS fresh, * FROM ${table} WHERE ${key} = $1 AND NOT EXISTS (SELECT 1 FROM spent)`,
  };
  return {
    statement,
    fused: `WITH ${statement.spent}\n${statement.answer}`,
    update,
    read: `SELECT * FROM ${table} WHERE ${key} = $1`,
  };
};

const SPEND_CODE = spendOnce('oidc_codes', 'code_hash', 'consumed_at', ', grant_id = $3');
const SPEND_REFRESH = spendOnce('oidc_refresh_tokens', 'token_hash', 'used_at');

type Spent<R> = R & { fresh: boolean };

const codeConsumption = (row: CodeRow | undefined, fresh: boolean): CodeConsumption =>
  row ? { status: fresh ? 'consumed' : 'replayed', code: codeFromRow(row) } : { status: 'unknown' };

const refreshConsumption = (row: RefreshRow | undefined, fresh: boolean): RefreshConsumption =>
  row ? { status: fresh ? 'consumed' : 'reused', token: refreshFromRow(row) } : { status: 'unknown' };

/** `consumeCode` as a statement, with what its answer means. */
export const spendCode = (codeHash: string, at: number, grantId: string | null) => ({
  statement: SPEND_CODE.statement,
  values: [codeHash, at, grantId],
  consumption: ([row]: Array<Spent<CodeRow>>) => codeConsumption(row, row?.fresh === true),
});

/** `consumeRefreshToken` as a statement, with what its answer means. */
export const spendRefreshToken = (tokenHash: string, at: number) => ({
  statement: SPEND_REFRESH.statement,
  values: [tokenHash, at],
  consumption: ([row]: Array<Spent<RefreshRow>>) => refreshConsumption(row, row?.fresh === true),
});

/** The spend, told to `answer` with whether this call marked the row: one statement on PostgreSQL, one or two on SQLite. */
async function spend<R, C>(
  sql: Sql,
  how: ReturnType<typeof spendOnce>,
  values: unknown[],
  answer: (row: R | undefined, fresh: boolean) => C,
): Promise<C> {
  if (sql.dialect.name === 'postgres') {
    const [row] = await sql.rows<Spent<R>>(how.fused, values);
    return answer(row, row?.fresh === true);
  }
  const row = await sql.row<R>(how.update, values);
  return row ? answer(row, true) : answer(await sql.row<R>(how.read, [values[0]]), false);
}

/** A refresh token (`t`) joined with its grant (`g`), as `REFRESH_GRANT_COLUMNS` reads them. */
export const TOKEN_WITH_GRANT = 'oidc_refresh_tokens t JOIN oidc_grants g ON g.grant_id = t.grant_id';

export function oidcStore(sql: Sql): OidcStore {
  const inSessions = sql.dialect.inList('session_id', '$1');
  const endSessions = `UPDATE oidc_grants SET revoked_at = $2 WHERE ${inSessions} AND revoked_at IS NULL AND offline = 0 RETURNING *`;
  const dropSessionCodes = `DELETE FROM oidc_codes WHERE ${inSessions} AND consumed_at IS NULL`;
  return {
    insertCode: async (code) => {
      await sql.count(...insertOf('oidc_codes', codeToRow({ ...code, consumedAt: null, grantId: null })));
    },
    findCode: (codeHash) => firstRow(sql, 'SELECT * FROM oidc_codes WHERE code_hash = $1', [codeHash], codeFromRow),
    consumeCode: (codeHash, at, grantId) => spend(sql, SPEND_CODE, [codeHash, at, grantId ?? null], codeConsumption),
    insertGrant: async (grant) => {
      await sql.count(...insertOf('oidc_grants', grantToRow({ ...grant, revokedAt: null })));
    },
    getGrant: (grantId) => firstRow(sql, 'SELECT * FROM oidc_grants WHERE grant_id = $1', [grantId], grantFromRow),
    revokeGrant: (grantId, at) =>
      changedOne(sql, 'UPDATE oidc_grants SET revoked_at = $2 WHERE grant_id = $1 AND revoked_at IS NULL', [
        grantId,
        at,
      ]),
    // One transaction: the grants revoked and the unspent codes of those sessions dropped together.
    endSessionGrants: async (sessionIds, at) => {
      const ids = [...new Set(sessionIds)];
      if (ids.length === 0) return [];
      return sql.atomic(async (tx) => {
        const rows = await tx.rows<GrantRow>(endSessions, [sql.dialect.list(ids), at]);
        await tx.count(dropSessionCodes, [sql.dialect.list(ids)]);
        return rows.map(grantFromRow);
      });
    },
    revokeClientGrants: (clientId, at) =>
      sql.atomic(async (tx) => {
        const rows = await tx.rows<GrantRow>(
          'UPDATE oidc_grants SET revoked_at = $2 WHERE client_id = $1 AND revoked_at IS NULL RETURNING *',
          [clientId, at],
        );
        await tx.count('DELETE FROM oidc_codes WHERE client_id = $1 AND consumed_at IS NULL', [clientId]);
        return rows.map(grantFromRow);
      }),
    insertRefreshToken: async (token) => {
      await sql.count(...insertOf('oidc_refresh_tokens', refreshToRow({ ...token, usedAt: null })));
    },
    extendRefreshToken: async (tokenHash, idleExpiresAt) =>
      changedOne(sql, 'UPDATE oidc_refresh_tokens SET idle_expires_at = $2 WHERE token_hash = $1 AND used_at IS NULL', [
        tokenHash,
        idleExpiresAt,
      ]),
    findRefreshToken: (tokenHash) =>
      firstRow(sql, 'SELECT * FROM oidc_refresh_tokens WHERE token_hash = $1', [tokenHash], refreshFromRow),
    findRefreshGrant: (tokenHash) =>
      firstRow(
        sql,
        `SELECT ${REFRESH_GRANT_COLUMNS} FROM ${TOKEN_WITH_GRANT} WHERE t.token_hash = $1`,
        [tokenHash],
        refreshGrantFromRow,
      ),
    consumeRefreshToken: (tokenHash, at) => spend(sql, SPEND_REFRESH, [tokenHash, at], refreshConsumption),
    revokeAccessToken: async (jti, expiresAt) => {
      await sql.count(
        'INSERT INTO oidc_revoked_access_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING',
        [jti, expiresAt],
      );
    },
    isAccessTokenRevoked: async (jti) =>
      (await sql.rows('SELECT 1 AS yes FROM oidc_revoked_access_tokens WHERE jti = $1', [jti])).length > 0,
    recordApproval: async (identityId, clientId, approval, at) => {
      await sql.count(
        `INSERT INTO oidc_approvals (identity_id, client_id, scope, resources, approved_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (identity_id, client_id) DO UPDATE SET scope = excluded.scope, resources = excluded.resources, approved_at = excluded.approved_at`,
        [identityId, clientId, approval.scopes.join(' '), JSON.stringify(approval.resources), at],
      );
    },
    approval: (identityId, clientId) =>
      firstRow(
        sql,
        'SELECT scope, resources FROM oidc_approvals WHERE identity_id = $1 AND client_id = $2',
        [identityId, clientId],
        approvalFromRow,
      ),
    approvedClients: (identityId) =>
      columnOf<string>(
        sql,
        'SELECT client_id FROM oidc_approvals WHERE identity_id = $1 ORDER BY client_id',
        [identityId],
        'client_id',
      ),
    removeApproval: async (identityId, clientId) =>
      (await sql.count('DELETE FROM oidc_approvals WHERE identity_id = $1 AND client_id = $2', [
        identityId,
        clientId,
      ])) > 0,
    revokeGrantsOf: (identityId, at) =>
      sql.count('UPDATE oidc_grants SET revoked_at = $2 WHERE identity_id = $1 AND revoked_at IS NULL', [
        identityId,
        at,
      ]),
    liveGrantsOf: async (identityId, at) =>
      (
        await sql.rows<GrantRow>(
          'SELECT * FROM oidc_grants WHERE identity_id = $1 AND revoked_at IS NULL AND expires_at > $2',
          [identityId, at],
        )
      ).map(grantFromRow),
    forgetIdentity: async (identityId) => {
      await sql.atomic(async (tx) => {
        await tx.count('DELETE FROM oidc_codes WHERE identity_id = $1', [identityId]);
        // Refresh tokens go with their grant (ON DELETE CASCADE).
        await tx.count('DELETE FROM oidc_grants WHERE identity_id = $1', [identityId]);
        await tx.count('DELETE FROM oidc_approvals WHERE identity_id = $1', [identityId]);
      });
    },
    purgeExpired: async (before) => {
      let removed = await sql.count(
        'DELETE FROM oidc_codes WHERE expires_at < $1 AND (consumed_at IS NULL OR grant_id IS NULL)',
        [before],
      );
      removed += await sql.count('DELETE FROM oidc_refresh_tokens WHERE idle_expires_at < $1', [before]);
      removed += await sql.count('DELETE FROM oidc_revoked_access_tokens WHERE expires_at < $1', [before]);
      return removed;
    },
  };
}
