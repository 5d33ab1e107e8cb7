import { firstRow, insertOf, type Sql } from '../sql.js';
import type { OperatorRole, OperatorStore, StoredOperatorRole } from '../interface.js';

interface OperatorRow {
  identity_id: string;
  role: OperatorRole;
  granted_at: number | string;
  granted_by: string | null;
}

const fromRow = (row: OperatorRow): StoredOperatorRole => ({
  identityId: row.identity_id,
  role: row.role,
  grantedAt: Number(row.granted_at),
  grantedBy: row.granted_by,
});

export function operatorStore(sql: Sql): OperatorStore {
  return {
    roleOf: async (identityId) =>
      (await firstRow(sql, 'SELECT * FROM operator_roles WHERE identity_id = $1', [identityId], fromRow))?.role ?? null,
    list: async () =>
      (await sql.rows<OperatorRow>('SELECT * FROM operator_roles ORDER BY role DESC, identity_id')).map(fromRow),
    grant: async (record) => {
      await sql.count(
        ...insertOf(
          'operator_roles',
          {
            identity_id: record.identityId,
            role: record.role,
            granted_at: record.grantedAt,
            granted_by: record.grantedBy,
          },
          'ON CONFLICT (identity_id) DO UPDATE SET role = excluded.role, granted_at = excluded.granted_at, granted_by = excluded.granted_by',
        ),
      );
    },
    revoke: async (identityId) =>
      (await sql.count('DELETE FROM operator_roles WHERE identity_id = $1', [identityId])) === 1,
    countOperators: async () =>
      Number(
        (await sql.row<{ n: number | string }>("SELECT COUNT(*) AS n FROM operator_roles WHERE role = 'operator'"))
          ?.n ?? 0,
      ),
  };
}
