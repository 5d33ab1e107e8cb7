import type { Test } from 'tap';
import type { Storage } from '../../../control-plane/src/storage/interface.js';

const target = (clientId: string) => ({
  clientId,
  baseUrl: `https://${clientId}.example/scim/v2`,
  tokenSealed: Buffer.from('sealed'),
  createdAt: 1000,
  updatedAt: 1000,
  lastSyncAt: null,
});

export function scimPushStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test('scim push store: a row queued again keeps one place, and a change during delivery is not lost', async (t) => {
    const { scimPush } = await open();
    await scimPush.putTarget(target('cl_a'));
    await scimPush.enqueue('cl_a', 'user', 'usr_1', 1000);
    await scimPush.enqueue('cl_a', 'user', 'usr_1', 1500);
    t.same(await scimPush.backlog(), { pending: 1, oldestCreatedAt: 1000 }, 'one row, its first queueing');

    const [claimed] = await scimPush.claimDue(2000, 'h1', 62_000, 10);
    t.match(claimed, { clientId: 'cl_a', resource: 'user', localId: 'usr_1', version: 2, attempts: 0 });
    t.same(await scimPush.claimDue(2000, 'h2', 62_000, 10), [], 'leased rows are not claimed twice');

    // Queued again while the delivery runs: the outcome gives the lease back and the row stays due.
    await scimPush.enqueue('cl_a', 'user', 'usr_1', 2500);
    const done = {
      state: 'delivered' as const,
      attempts: 0,
      nextAttemptAt: 2000,
      lastStatus: null,
      lastError: null,
      finishedAt: 3000,
    };
    t.equal(await scimPush.finish(claimed!, 'h1', done), 'requeued');
    const [again] = await scimPush.claimDue(3000, 'h1', 63_000, 10);
    t.equal(again!.version, 3);
    t.equal(await scimPush.finish(again!, 'h2', done), 'lost', 'only the holder settles');
    t.equal(await scimPush.finish(again!, 'h1', done), 'finished');
    t.same(await scimPush.unfinished('cl_a'), []);

    // A failure stays reported until it succeeds; a finished row queued again starts afresh.
    await scimPush.enqueue('cl_a', 'group', 'team_1', 4000);
    const [group] = await scimPush.claimDue(4000, 'h1', 64_000, 10);
    const failed = {
      state: 'pending' as const,
      attempts: 1,
      nextAttemptAt: 9000,
      lastStatus: 503,
      lastError: 'status_503',
      finishedAt: null,
    };
    t.equal(await scimPush.finish(group!, 'h1', failed), 'finished');
    t.match(await scimPush.unfinished('cl_a'), [
      { resource: 'group', attempts: 1, lastStatus: 503, nextAttemptAt: 9000 },
    ]);
    t.same(await scimPush.claimDue(5000, 'h1', 65_000, 10), [], 'not before its backoff');
    await scimPush.enqueue('cl_a', 'group', 'team_1', 6000);
    t.match(await scimPush.unfinished('cl_a'), [{ attempts: 1, nextAttemptAt: 6000 }], 'a change brings it forward');
    await scimPush.enqueue('cl_a', 'user', 'usr_1', 7000);
    t.match(
      (await scimPush.unfinished('cl_a')).find((row) => row.resource === 'user'),
      {
        attempts: 0,
        createdAt: 7000,
        state: 'pending',
      },
    );
    t.equal(await scimPush.purge(10_000), 0, 'nothing delivered is left to purge');
  });

  t.test('scim push store: targets and links, removed with their client', async (t) => {
    const { scimPush } = await open();
    await scimPush.putTarget(target('cl_b'));
    await scimPush.putTarget({ ...target('cl_b'), baseUrl: 'https://moved.example/scim', updatedAt: 2000 });
    await scimPush.markSynced('cl_b', 3000);
    t.match(await scimPush.target('cl_b'), {
      baseUrl: 'https://moved.example/scim',
      createdAt: 1000,
      lastSyncAt: 3000,
    });
    t.ok((await scimPush.target('cl_b'))!.tokenSealed.equals(Buffer.from('sealed')));
    await scimPush.putLink({
      clientId: 'cl_b',
      resource: 'user',
      localId: 'usr_1',
      remoteId: 'r1',
      active: true,
      updatedAt: 1,
    });
    await scimPush.putLink({
      clientId: 'cl_b',
      resource: 'user',
      localId: 'usr_1',
      remoteId: 'r1',
      active: false,
      updatedAt: 2,
    });
    t.match(await scimPush.link('cl_b', 'user', 'usr_1'), { remoteId: 'r1', active: false });
    t.equal((await scimPush.links('cl_b', 'user')).length, 1);
    await scimPush.enqueue('cl_b', 'reconcile', 'cl_b', 1000);
    t.equal(await scimPush.removeTarget('cl_b'), true);
    t.equal(await scimPush.removeTarget('cl_b'), false);
    t.equal(await scimPush.link('cl_b', 'user', 'usr_1'), null);
    t.same(await scimPush.unfinished('cl_b'), []);
  });
}
