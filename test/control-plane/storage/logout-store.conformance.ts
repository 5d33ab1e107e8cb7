import type { Test } from 'tap';
import type { BackchannelLogout, Storage, StoredGrant } from '../../../control-plane/src/storage/interface.js';

const logout = (id: string, sessionId: string, clientId: string, at = 1000): BackchannelLogout => ({
  logoutId: id,
  clientId,
  identityId: 'usr_1',
  sessionId,
  jti: `jti_${id}`,
  createdAt: at,
  attempts: 0,
  nextAttemptAt: at,
  state: 'pending',
  lastError: null,
  finishedAt: null,
});

const grant = (grantId: string, sessionId: string, clientId: string): StoredGrant => ({
  grantId,
  clientId,
  identityId: 'usr_1',
  sessionId,
  scope: 'openid',
  resource: null,
  assurance: 'passkey',
  amr: ['pop'],
  authTime: 1000,
  createdAt: 1000,
  expiresAt: 86_400_000,
  revokedAt: null,
  offline: false,
});

/** The back-channel logout outbox's contract, for every backend (docs/oidc.md#101-back-channel-logout). */
export function logoutStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test(
    'logout store: participants are the clients with a grant or a recorded ID token in the sessions',
    async (t) => {
      const storage = await open();
      await storage.oidc.insertGrant(grant('gr_1', 'ses_1', 'cl_a'));
      await storage.oidc.insertGrant(grant('gr_2', 'ses_1', 'cl_a'));
      await storage.oidc.insertGrant({ ...grant('gr_3', 'ses_1', 'cl_b'), revokedAt: 2000 });
      await storage.oidc.insertGrant(grant('gr_4', 'ses_2', 'cl_c'));
      await storage.logouts.recordParticipant({ sessionId: 'ses_1', clientId: 'cl_d', identityId: 'usr_1' }, 1000);
      await storage.logouts.recordParticipant({ sessionId: 'ses_1', clientId: 'cl_d', identityId: 'usr_1' }, 1500);
      await storage.logouts.recordParticipant({ sessionId: 'ses_3', clientId: 'cl_e', identityId: 'usr_1' }, 1000);
      t.same(await storage.logouts.participants(['ses_1']), [
        { sessionId: 'ses_1', clientId: 'cl_a', identityId: 'usr_1' },
        { sessionId: 'ses_1', clientId: 'cl_b', identityId: 'usr_1' },
        { sessionId: 'ses_1', clientId: 'cl_d', identityId: 'usr_1' },
      ]);
      t.same(
        (await storage.logouts.participants(['ses_2', 'ses_3', 'ses_2'])).map((p) => p.clientId),
        ['cl_c', 'cl_e'],
      );
      t.same(await storage.logouts.participants([]), []);
      t.same(await storage.logouts.participants(['ses_none']), []);
    },
  );

  t.test('logout store: one logout per session and client; claims lease each row to one holder', async (t) => {
    const storage = await open();
    t.equal(await storage.logouts.enqueue(logout('bcl_1', 'ses_1', 'cl_a')), true);
    t.equal(await storage.logouts.enqueue(logout('bcl_2', 'ses_1', 'cl_a')), false, 'the same pair again');
    t.equal(await storage.logouts.enqueue(logout('bcl_3', 'ses_1', 'cl_b', 1200)), true);
    t.equal(await storage.logouts.enqueue({ ...logout('bcl_4', 'ses_2', 'cl_a'), nextAttemptAt: 9000 }), true);
    t.same(await storage.logouts.get('bcl_1'), logout('bcl_1', 'ses_1', 'cl_a'));
    t.equal(await storage.logouts.get('bcl_2'), null);

    const [first, second] = await Promise.all([
      storage.logouts.claimDue(5000, 'w1', 65_000, 10),
      storage.logouts.claimDue(5000, 'w2', 65_000, 10),
    ]);
    const claimed = [...first!, ...second!].map((l) => l.logoutId).sort();
    t.same(claimed, ['bcl_1', 'bcl_3'], 'each due row once across both holders; the later one is not due');
    t.same(await storage.logouts.claimDue(6000, 'w3', 66_000, 10), [], 'leased rows are not claimed again');
    const [mine] = first!.length ? first! : second!;
    const holder = first!.length ? 'w1' : 'w2';
    t.equal(
      await storage.logouts.finish(mine!.logoutId, 'w3', {
        state: 'delivered',
        attempts: 1,
        nextAttemptAt: 5000,
        lastError: null,
        finishedAt: 7000,
      }),
      false,
      'only the holder finishes it',
    );
    t.equal(
      await storage.logouts.finish(mine!.logoutId, holder, {
        state: 'pending',
        attempts: 1,
        nextAttemptAt: 20_000,
        lastError: 'status_503',
        finishedAt: null,
      }),
      true,
    );
    t.match(await storage.logouts.get(mine!.logoutId), { state: 'pending', attempts: 1, lastError: 'status_503' });
    t.same(
      (await storage.logouts.claimDue(70_000, 'w4', 130_000, 10)).map((l) => l.logoutId).sort(),
      ['bcl_1', 'bcl_3', 'bcl_4'],
      'after the wait, and once a lease ran out, rows are claimed again',
    );
    t.same((await storage.logouts.claimDue(70_000, 'w5', 130_000, 1)).length, 0, 'still leased to w4');
  });

  t.test('logout store: finished rows and old participants are purged, pending ones stay', async (t) => {
    const storage = await open();
    await storage.logouts.enqueue(logout('bcl_done', 'ses_1', 'cl_a'));
    await storage.logouts.enqueue(logout('bcl_open', 'ses_2', 'cl_a'));
    await storage.logouts.recordParticipant({ sessionId: 'ses_1', clientId: 'cl_a', identityId: 'usr_1' }, 1000);
    await storage.logouts.claimDue(1000, 'w', 2000, 10);
    await storage.logouts.finish('bcl_done', 'w', {
      state: 'delivered',
      attempts: 1,
      nextAttemptAt: 1000,
      lastError: null,
      finishedAt: 1500,
    });
    t.equal(await storage.logouts.purge(1000, 500), 0, 'nothing old enough');
    t.equal(await storage.logouts.purge(2000, 2000), 2);
    t.equal(await storage.logouts.get('bcl_done'), null);
    t.ok(await storage.logouts.get('bcl_open'), 'a pending logout is never purged');
    t.same(await storage.logouts.listForSession('ses_2'), [{ ...logout('bcl_open', 'ses_2', 'cl_a'), attempts: 0 }]);
  });

  t.test('logout store: a logout queued in a rolled-back transaction is not there', async (t) => {
    const storage = await open();
    await t.rejects(
      storage.transaction(async (tx) => {
        await tx.logouts.enqueue(logout('bcl_tx', 'ses_1', 'cl_a'));
        throw new Error('roll back');
      }),
    );
    t.equal(await storage.logouts.get('bcl_tx'), null);
  });
}
