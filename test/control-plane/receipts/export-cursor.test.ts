import t, { type Test } from 'tap';
import { build, manualClock } from '../../helpers/build.js';
import { ADMIN } from '../../helpers/oidc.js';
import { createMigratedTestDatabase, postgresAvailability } from '../../helpers/postgres.js';

/**
 * The audit export's cursor on both backends (docs/events.md#audit-export): receipts that share
 * a timestamp, straddle sealed epochs, or commit out of the order they were written in are each
 * given once, whatever filter pages through them.
 */
const admin = { authorization: `Bearer ${ADMIN}` };
const SAME = Date.parse('2026-12-07T12:00:00.000Z');
const users = ['usr_ada', 'usr_bob', 'usr_cyd'];
const FILTERS = [
  '',
  '&type=session.started',
  '&subject=usr_bob',
  '&type=session.revoked&subject=usr_cyd',
  `&since=${new Date(SAME).toISOString()}&until=${new Date(SAME + 1).toISOString()}`,
  `&type=session.started&since=${new Date(SAME).toISOString()}`,
];

interface Page {
  receipts: Array<{ hash: string }>;
  next: string | null;
}

function suite(databaseUrl?: (t: Test) => Promise<string>) {
  return async (t: Test) => {
    const clock = manualClock(SAME);
    const { app, services } = await build(t, {
      now: clock.now,
      config: {
        adminToken: ADMIN,
        // Epochs of seven: pages cross sealed and pending receipts, and epoch boundaries.
        ledger: { sealMaxReceipts: 7 },
        ...(databaseUrl ? { databaseUrl: await databaseUrl(t) } : {}),
      },
    });
    const { storage, events } = services;
    let n = 0;
    /** One receipt, all in the same millisecond, in its own transaction, open until `hold` settles. */
    const write = (hold?: Promise<void>) => {
      const i = n++;
      const identityId = users[i % 3]!;
      const event =
        i % 3 === 2
          ? { type: 'session.revoked' as const, identityId, sessionId: `ses_${i}`, by: 'system' }
          : {
              type: 'session.started' as const,
              identityId,
              sessionId: `ses_${i}`,
              deviceId: `dev_${i}`,
              method: 'passkey' as const,
              assurance: 'passkey' as const,
            };
      return storage.transaction(async (tx) => {
        const { receipt } = await events.record(tx, { ...event, at: clock.now(), outcome: 'success' });
        await hold;
        return receipt!;
      });
    };
    const page = async (query: string, limit = 4) => {
      const answer = await app.inject({ method: 'GET', url: `/admin/receipts?limit=${limit}${query}`, headers: admin });
      if (answer.statusCode !== 200) t.fail(answer.body);
      return answer.json() as Page;
    };
    /** Where a reader stands: the cursor of the last receipt it was given. */
    const positions = async () =>
      new Map((await storage.receipts.list({ after: 0, limit: 100_000 })).map((r) => [r.hash, r.position]));
    /** Pages through `filter` from `from`, running `between` after each page; the hashes given and where it stopped. */
    const pageAll = async (filter: string, from = '', between: () => Promise<unknown> = async () => undefined) => {
      const seen: string[] = [];
      let after = from;
      for (let pages = 0; pages < 500; pages++) {
        const got = await page(`${filter}${after ? `&after=${after}` : ''}`);
        seen.push(...got.receipts.map((item) => item.hash));
        await between();
        if (got.next === null) {
          const last = seen.at(-1);
          return { seen, cursor: last ? String((await positions()).get(last)) : after };
        }
        after = got.next;
      }
      throw new Error('the export never ended');
    };
    /** Every receipt `filter` matches, in one page. */
    const everything = async (filter: string) => (await page(filter, 1000)).receipts.map((item) => item.hash);

    // Forty receipts in the same millisecond, sealed in epochs of seven as they go.
    for (let i = 0; i < 40; i++) await write();
    await services.ledger.sealNow();
    for (const filter of FILTERS) {
      const { seen } = await pageAll(filter);
      t.ok(seen.length > 4, `${filter || 'no filter'}: ${seen.length} receipts over pages`);
      t.same(seen, await everything(filter), `${filter || 'no filter'}: each receipt once, in ledger order`);
    }

    // Writers keep committing, three at once after each of the first eight pages, while an auditor pages.
    for (const filter of FILTERS) {
      let pages = 0;
      const writes = () => (pages++ < 8 ? Promise.all(Array.from({ length: 3 }, () => write())) : Promise.resolve());
      const { seen } = await pageAll(filter, '', writes);
      t.equal(new Set(seen).size, seen.length, `${filter || 'no filter'} under writes: no receipt twice`);
      const all = await everything(filter);
      const passedOver = all.slice(0, all.indexOf(seen.at(-1)!)).filter((hash) => !seen.includes(hash));
      t.same(passedOver, [], `${filter || 'no filter'} under writes: none passed over`);
    }

    // PostgreSQL: a receipt written first and committed last, while later ones commit and a reader
    // pages past them (on SQLite, readers and writers take turns, so no page can be read meanwhile).
    if (!databaseUrl) return;
    const { cursor: start } = await pageAll('');
    let release!: () => void;
    const late = write(new Promise<void>((resolve) => (release = resolve)));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const others = await Promise.all([write(), write(), write()]);
    const before = await pageAll('', start);
    release();
    const written = [await late, ...others];
    const after = await pageAll('', before.cursor);
    const given = [...before.seen, ...after.seen];
    t.equal(new Set(given).size, given.length, 'no receipt twice');
    t.same(
      written.filter((hash) => !given.includes(hash)),
      [],
      'the receipt that committed last is given too, as are the others',
    );
  };
}

t.test('the audit export cursor on SQLite', suite());
const postgres = await postgresAvailability();
if (!postgres.run) t.test('the audit export cursor on PostgreSQL', { skip: postgres.reason }, () => undefined);
else t.test('the audit export cursor on PostgreSQL', suite(createMigratedTestDatabase));
