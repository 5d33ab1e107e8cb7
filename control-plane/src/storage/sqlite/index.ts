import { sharedStores } from '../stores/index.js';
import { ClientRowCache, clientStore } from '../stores/client-store.js';
import type { GrantSubject, SpentWith, Storage, Stores, WritesWithSpend } from '../interface.js';
import type { MigrationReport } from '../migration-ledger.js';
import { openDatabase } from './database.js';
import { cached, SerialRunner } from './serial-runner.js';
import { sqliteSql } from './sqlite-sql.js';
import type { Sql } from '../sql.js';

function storesOn(sql: Sql, clientRows: ClientRowCache, outsideTransactions: boolean): Stores {
  return {
    ...sharedStores(sql),
    clients: clientStore(sql, { rows: clientRows, reads: outsideTransactions }),
  };
}

/**
 * A grant's subject from the stores, as four in-process reads: together 40–55 µs of an exchange's
 * ~800 with 16 in flight, too little to tie one statement to every identity column
 * (docs/performance.md, 2026-11-24).
 */
async function subjectOf(stores: Stores, identityId: string, sessionId: string, now: number): Promise<GrantSubject> {
  const [state, sessionLive, identity, emails] = await Promise.all([
    stores.identities.state(identityId),
    stores.sessions.isLive(sessionId, now),
    stores.identities.get(identityId),
    stores.emails.listByIdentity(identityId),
  ]);
  return { state, sessionLive, identity, emails };
}

export function openSqliteStorage(
  dataDir: string,
  options: { migrate?: boolean; onMigrated?: (report: MigrationReport) => void; busyTimeoutMs?: number } = {},
): Storage {
  const db = openDatabase(dataDir, undefined, options);
  const runner = new SerialRunner(db);
  // Built once: a transaction's stores only differ in the runner, which is the same every time.
  const clientRows = new ClientRowCache();
  const sql = sqliteSql(runner);
  const inTransaction = storesOn(sql.inside, clientRows, false);
  const stores = storesOn(sql.outside, clientRows, true);
  // The spend, then (only if it happened) the writes it allows, in one transaction.
  const spendThen = <C extends { status: string }, T>(spend: () => Promise<C>, write: WritesWithSpend<T>) =>
    runner.transaction(async (): Promise<SpentWith<C, T>> => {
      const consumption = await spend();
      return consumption.status === 'consumed' ? { consumption, written: await write(inTransaction) } : { consumption };
    });
  return {
    ...stores,
    transaction: (work) => runner.transaction(() => work(inTransaction)),
    redeemCode: (codeHash, at, grantId, write) =>
      spendThen(() => inTransaction.oidc.consumeCode(codeHash, at, grantId), write),
    rotateRefreshToken: (tokenHash, at, write) =>
      spendThen(() => inTransaction.oidc.consumeRefreshToken(tokenHash, at), write),
    findCodeWithSubject: async (codeHash, now) => {
      const code = await stores.oidc.findCode(codeHash);
      return code && { code, subject: await subjectOf(stores, code.identityId, code.sessionId, now) };
    },
    findRefreshWithSubject: async (tokenHash, now) => {
      const found = await stores.oidc.findRefreshGrant(tokenHash);
      return (
        found && { ...found, subject: await subjectOf(stores, found.grant.identityId, found.grant.sessionId, now) }
      );
    },
    ping: () => runner.run((d) => cached(d, 'SELECT 1 AS ok').get() !== undefined),
    close: async () => {
      db.close();
    },
  };
}
