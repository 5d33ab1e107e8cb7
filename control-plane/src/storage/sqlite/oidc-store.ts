import type { OidcStore, StoredGrant } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import {
  REFRESH_GRANT_COLUMNS,
  approvalFromRow,
  codeFromRow,
  grantFromRow,
  refreshFromRow,
  refreshGrantFromRow,
  type CodeRow,
  type GrantRow,
  type RefreshGrantRow,
  type RefreshRow,
} from '../rows.js';

export function sqliteOidcStore(runner: Runner): OidcStore {
  return {
    insertCode: (code) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO oidc_codes (code_hash, client_id, redirect_uri, identity_id, session_id, scope, resource, nonce, code_challenge,
             dpop_jkt, assurance, amr, auth_time, created_at, expires_at, consumed_at, grant_id, offline)
           VALUES (@code_hash, @client_id, @redirect_uri, @identity_id, @session_id, @scope, @resource, @nonce, @code_challenge,
             @dpop_jkt, @assurance, @amr, @auth_time, @created_at, @expires_at, NULL, NULL, @offline)`,
        ).run({
          code_hash: code.codeHash,
          client_id: code.clientId,
          redirect_uri: code.redirectUri,
          identity_id: code.identityId,
          session_id: code.sessionId,
          scope: code.scope,
          resource: code.resource,
          nonce: code.nonce,
          code_challenge: code.codeChallenge,
          dpop_jkt: code.dpopJkt,
          assurance: code.assurance,
          amr: JSON.stringify(code.amr),
          auth_time: code.authTime,
          created_at: code.createdAt,
          expires_at: code.expiresAt,
          offline: code.offline ? 1 : 0,
        });
      }),
    findCode: (codeHash) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM oidc_codes WHERE code_hash = ?').get(codeHash) as CodeRow | undefined;
        return row ? codeFromRow(row) : null;
      }),
    consumeCode: (codeHash, at, grantId) =>
      runner.run((db) => {
        const row = cached(
          db,
          'UPDATE oidc_codes SET consumed_at = ?, grant_id = ? WHERE code_hash = ? AND consumed_at IS NULL RETURNING *',
        ).get(at, grantId ?? null, codeHash) as CodeRow | undefined;
        if (row) return { status: 'consumed' as const, code: codeFromRow(row) };
        const used = cached(db, 'SELECT * FROM oidc_codes WHERE code_hash = ?').get(codeHash) as CodeRow | undefined;
        return used ? { status: 'replayed' as const, code: codeFromRow(used) } : { status: 'unknown' as const };
      }),
    insertGrant: (grant) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO oidc_grants (grant_id, client_id, identity_id, session_id, scope, resource, assurance, amr, auth_time, created_at, expires_at, revoked_at, offline)
           VALUES (@grant_id, @client_id, @identity_id, @session_id, @scope, @resource, @assurance, @amr, @auth_time, @created_at, @expires_at, NULL, @offline)`,
        ).run({
          grant_id: grant.grantId,
          client_id: grant.clientId,
          identity_id: grant.identityId,
          session_id: grant.sessionId,
          scope: grant.scope,
          resource: grant.resource,
          assurance: grant.assurance,
          amr: JSON.stringify(grant.amr),
          auth_time: grant.authTime,
          created_at: grant.createdAt,
          expires_at: grant.expiresAt,
          offline: grant.offline ? 1 : 0,
        });
      }),
    getGrant: (grantId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM oidc_grants WHERE grant_id = ?').get(grantId) as GrantRow | undefined;
        return row ? grantFromRow(row) : null;
      }),
    revokeGrant: (grantId, at) =>
      runner.run(
        (db) =>
          cached(db, 'UPDATE oidc_grants SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL').run(at, grantId)
            .changes === 1,
      ),
    endSessionGrants: (sessionIds, at) =>
      runner.run((db) => {
        const revoked: StoredGrant[] = [];
        const revoke = cached(
          db,
          'UPDATE oidc_grants SET revoked_at = ? WHERE session_id = ? AND revoked_at IS NULL AND offline = 0 RETURNING *',
        );
        const dropCodes = cached(db, 'DELETE FROM oidc_codes WHERE session_id = ? AND consumed_at IS NULL');
        for (const sessionId of new Set(sessionIds)) {
          revoked.push(...(revoke.all(at, sessionId) as GrantRow[]).map(grantFromRow));
          dropCodes.run(sessionId);
        }
        return revoked;
      }),
    revokeClientGrants: (clientId, at) =>
      runner.run((db) => {
        const rows = cached(
          db,
          'UPDATE oidc_grants SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL RETURNING *',
        ).all(at, clientId) as GrantRow[];
        cached(db, 'DELETE FROM oidc_codes WHERE client_id = ? AND consumed_at IS NULL').run(clientId);
        return rows.map(grantFromRow);
      }),
    insertRefreshToken: (token) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO oidc_refresh_tokens (token_hash, grant_id, dpop_jkt, created_at, idle_expires_at, used_at)
           VALUES (@token_hash, @grant_id, @dpop_jkt, @created_at, @idle_expires_at, NULL)`,
        ).run({
          token_hash: token.tokenHash,
          grant_id: token.grantId,
          dpop_jkt: token.dpopJkt,
          created_at: token.createdAt,
          idle_expires_at: token.idleExpiresAt,
        });
      }),
    findRefreshToken: (tokenHash) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM oidc_refresh_tokens WHERE token_hash = ?').get(tokenHash) as
          RefreshRow | undefined;
        return row ? refreshFromRow(row) : null;
      }),
    findRefreshGrant: (tokenHash) =>
      runner.run((db) => {
        const row = cached(
          db,
          `SELECT ${REFRESH_GRANT_COLUMNS} FROM oidc_refresh_tokens t JOIN oidc_grants g ON g.grant_id = t.grant_id WHERE t.token_hash = ?`,
        ).get(tokenHash) as RefreshGrantRow | undefined;
        return row ? refreshGrantFromRow(row) : null;
      }),
    consumeRefreshToken: (tokenHash, at) =>
      runner.run((db) => {
        const row = cached(
          db,
          'UPDATE oidc_refresh_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL RETURNING *',
        ).get(at, tokenHash) as RefreshRow | undefined;
        if (row) return { status: 'consumed' as const, token: refreshFromRow(row) };
        const used = cached(db, 'SELECT * FROM oidc_refresh_tokens WHERE token_hash = ?').get(tokenHash) as
          RefreshRow | undefined;
        return used ? { status: 'reused' as const, token: refreshFromRow(used) } : { status: 'unknown' as const };
      }),
    revokeAccessToken: (jti, expiresAt) =>
      runner.run((db) => {
        cached(
          db,
          'INSERT INTO oidc_revoked_access_tokens (jti, expires_at) VALUES (?, ?) ON CONFLICT (jti) DO NOTHING',
        ).run(jti, expiresAt);
      }),
    isAccessTokenRevoked: (jti) =>
      runner.run(
        (db) => cached(db, 'SELECT 1 AS yes FROM oidc_revoked_access_tokens WHERE jti = ?').get(jti) !== undefined,
      ),
    recordApproval: (identityId, clientId, approval, at) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO oidc_approvals (identity_id, client_id, scope, resources, approved_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (identity_id, client_id) DO UPDATE SET scope = excluded.scope, resources = excluded.resources, approved_at = excluded.approved_at`,
        ).run(identityId, clientId, approval.scopes.join(' '), JSON.stringify(approval.resources), at);
      }),
    approval: (identityId, clientId) =>
      runner.run((db) => {
        const row = cached(
          db,
          'SELECT scope, resources FROM oidc_approvals WHERE identity_id = ? AND client_id = ?',
        ).get(identityId, clientId) as { scope: string; resources: string } | undefined;
        return row ? approvalFromRow(row) : null;
      }),
    revokeGrantsOf: (identityId, at) =>
      runner.run(
        (db) =>
          cached(db, 'UPDATE oidc_grants SET revoked_at = ? WHERE identity_id = ? AND revoked_at IS NULL').run(
            at,
            identityId,
          ).changes,
      ),
    forgetIdentity: (identityId) =>
      runner.run((db) => {
        cached(db, 'DELETE FROM oidc_codes WHERE identity_id = ?').run(identityId);
        // Refresh tokens go with their grant (ON DELETE CASCADE).
        cached(db, 'DELETE FROM oidc_grants WHERE identity_id = ?').run(identityId);
        cached(db, 'DELETE FROM oidc_approvals WHERE identity_id = ?').run(identityId);
      }),
    approvedClients: (identityId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT client_id FROM oidc_approvals WHERE identity_id = ? ORDER BY client_id').all(
            identityId,
          ) as Array<{ client_id: string }>
        ).map((row) => row.client_id),
      ),
    removeApproval: (identityId, clientId) =>
      runner.run(
        (db) =>
          cached(db, 'DELETE FROM oidc_approvals WHERE identity_id = ? AND client_id = ?').run(identityId, clientId)
            .changes > 0,
      ),
    purgeExpired: (before) =>
      runner.run((db) => {
        let removed = cached(
          db,
          'DELETE FROM oidc_codes WHERE expires_at < ? AND (consumed_at IS NULL OR grant_id IS NULL)',
        ).run(before).changes;
        removed += cached(db, 'DELETE FROM oidc_refresh_tokens WHERE idle_expires_at < ?').run(before).changes;
        removed += cached(db, 'DELETE FROM oidc_revoked_access_tokens WHERE expires_at < ?').run(before).changes;
        return removed;
      }),
  };
}
