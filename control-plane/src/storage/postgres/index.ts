import { sharedStores } from '../stores/index.js';
import { clientStore } from '../stores/client-store.js';
import type { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import { loadMigrations, type Migration, type MigrationReport } from '../migration-ledger.js';
import type { SpentWith, Storage, Stores, WritesWithSpend } from '../interface.js';
import { spendCode, spendRefreshToken } from '../stores/oidc-store.js';
import { postgresCodeWithSubject, postgresRefreshWithSubject } from './grant-subject.js';
import { checkPostgresSchema, migratePostgres } from './schema-ledger.js';
import {
  clientSql,
  collectingSql,
  createPool,
  inTransaction,
  poolSql,
  spendWith,
  type Reach,
  type SpendStatement,
  type Sql,
} from './sql.js';

function storesOn(sql: Sql): Stores {
  return {
    ...sharedStores(sql),
    clients: clientStore(sql),
  };
}

/** A spend and its writes as one statement on the pool; `write`'s answer counts only if the spend happened. */
async function spendTogether<C extends { status: string }, R, T>(
  sql: Sql,
  spend: { statement: SpendStatement; values: unknown[]; consumption: (rows: R[]) => C },
  write: WritesWithSpend<T>,
): Promise<SpentWith<C, T>> {
  const writes: Array<[string, unknown[]]> = [];
  const written = await write(storesOn(collectingSql(writes)));
  const consumption = spend.consumption(await sql.rows<R>(...spendWith(spend.statement, spend.values, writes)));
  return consumption.status === 'consumed' ? { consumption, written } : { consumption };
}

export interface PostgresOptions {
  /** Apply missing migrations first (default); otherwise refuse a schema that is not exactly the code's. */
  migrate?: boolean;
  poolSize?: number;
  migrations?: Migration[];
  /** Told what the migration run did (start-up logs it). */
  onMigrated?: (report: MigrationReport) => void;
  /** Longest a request waits for a connection (`database.connectTimeoutMs`); unset waits on. */
  connectTimeoutMs?: number;
  /** Longest a request waits for one statement (`database.queryTimeoutMs`); unset waits on. Migrations have none. */
  queryTimeoutMs?: number;
  /** Told of every outage failure and success (the server's logs and `kp_dependency_errors_total`). */
  monitor?: DependencyMonitor;
}

export async function openPostgresStorage(url: string, options: PostgresOptions = {}): Promise<Storage> {
  const pool = createPool(url, options.poolSize ?? 10, {
    ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
  });
  // An idle connection the server drops (restart, failover) must not crash the process; the
  // pool removes it, and the next statement opens a new one. It is no outage by itself (a
  // proxy may close idle connections): the statements that fail tell the monitor.
  pool.on('error', () => undefined);
  const migrations = options.migrations ?? loadMigrations('postgres');
  try {
    if (options.migrate ?? true) {
      const report = await migratePostgres(pool, migrations);
      options.onMigrated?.(report);
    } else await checkPostgresSchema(pool, migrations);
  } catch (error) {
    await pool.end();
    throw error;
  }
  const reach: Reach = {
    queryTimeoutMs: options.queryTimeoutMs ?? 0,
    ...(options.monitor ? { monitor: options.monitor } : {}),
  };
  const direct = poolSql(pool, reach);
  return {
    ...storesOn(direct),
    transaction: (work) => inTransaction(pool, (client) => work(storesOn(clientSql(client, reach))), reach),
    redeemCode: (codeHash, at, grantId, write) => spendTogether(direct, spendCode(codeHash, at, grantId), write),
    findCodeWithSubject: (codeHash, now) => postgresCodeWithSubject(direct, codeHash, now),
    findRefreshWithSubject: (tokenHash, now) => postgresRefreshWithSubject(direct, tokenHash, now),
    rotateRefreshToken: (tokenHash, at, write) => spendTogether(direct, spendRefreshToken(tokenHash, at), write),
    // Ready only on a server that takes writes: behind an address that moved to a standby not
    // promoted yet, reads answer but every sign-in would fail.
    ping: async () => {
      try {
        const [row] = await direct.rows<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
        return row?.standby === false;
      } catch {
        return false;
      }
    },
    close: () => pool.end(),
  };
}
