import type { Storage } from '../../../control-plane/src/storage/interface.js';
import { identity, session } from './fixtures/accounts.js';

interface Tap {
  test(name: string, fn: (t: Tap) => Promise<void>): Promise<void> | unknown;
  equal(a: unknown, b: unknown, m?: string): void;
  same(a: unknown, b: unknown, m?: string): void;
  ok(a: unknown, m?: string): void;
  notOk(a: unknown, m?: string): void;
  rejects(p: Promise<unknown>, m?: string): Promise<void> | unknown;
}

/** Behaviour every identity, credential, session and device store backend must show. */
export function accountStoresConformance(t: Tap, open: () => Promise<Storage>): void {
  t.test('identity store: unique names, aliases that keep resolving, one founder', async (t) => {
    const s = await open();
    t.ok(await s.identities.create(identity('usr_a', 'ada', true)));
    t.notOk(await s.identities.create(identity('usr_b', 'ada')), 'a taken name is refused');
    t.ok(await s.identities.create(identity('usr_b', 'grace')));
    await t.rejects(s.identities.create(identity('usr_c', 'third', true)), 'only one founder');
    t.equal(await s.identities.count(), 2);
    t.ok(await s.identities.founderExists());
    t.equal((await s.identities.findByUsername('ada'))?.identityId, 'usr_a');
    t.equal(await s.identities.findByUsername('nobody'), null);

    t.ok(await s.identities.rename('usr_a', 'ada2', 20));
    t.equal((await s.identities.get('usr_a'))?.username, 'ada2');
    t.equal((await s.identities.findByUsername('ada'))?.identityId, 'usr_a', 'the old name still resolves');
    t.same(await s.identities.aliases('usr_a'), ['ada']);
    t.notOk(await s.identities.rename('usr_b', 'ada', 21), 'an alias cannot be taken by someone else');
    t.notOk(await s.identities.create(identity('usr_d', 'ada')), 'nor claimed by a new account');
    t.ok(await s.identities.rename('usr_a', 'ada', 22), "taking back one's own alias");
    t.same(await s.identities.aliases('usr_a'), ['ada2']);
    t.equal((await s.identities.get('usr_a'))?.username, 'ada');

    await s.identities.setDisplayName('usr_b', 'Grace Hopper', 30);
    await s.identities.setPreferences('usr_b', { theme: 'dark' }, 31);
    const grace = await s.identities.get('usr_b');
    t.same(
      [grace?.displayName, grace?.preferences, grace?.updatedAt, grace?.founder],
      ['Grace Hopper', { theme: 'dark' }, 31, false],
    );
  });

  t.test('identity store: a declined passkey offer is remembered with its time', async (t) => {
    const s = await open();
    await s.identities.create(identity('usr_a', 'ada'));
    t.equal((await s.identities.get('usr_a'))?.passkeyUpgradeDeclinedAt, null, 'never declined');
    await s.identities.declinePasskeyUpgrade('usr_a', 40);
    await s.identities.declinePasskeyUpgrade('usr_a', 45);
    t.equal((await s.identities.get('usr_a'))?.passkeyUpgradeDeclinedAt, 45, 'the last decline counts');
    t.equal((await s.identities.findByUsername('ada'))?.passkeyUpgradeDeclinedAt, 45);
  });

  t.test("credential store: the authenticator's AAGUID, when known", async (t) => {
    const s = await open();
    await s.identities.create(identity('usr_a', 'ada'));
    const cred = (credId: string, aaguid?: string) => ({
      credId,
      identityId: 'usr_a',
      publicKey: new Uint8Array([1]),
      counter: 0,
      transports: [],
      backupEligible: true,
      backedUp: true,
      label: credId,
      createdAt: credId === 'old' ? 1 : 2,
      lastUsedAt: null,
      ...(aaguid ? { aaguid } : {}),
    });
    t.ok(await s.credentials.insert(cred('old')));
    t.ok(await s.credentials.insert(cred('new', 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4')));
    t.same(
      (await s.credentials.listByIdentity('usr_a')).map((c) => c.aaguid),
      [null, 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4'],
      'listed, null when not recorded',
    );
    t.equal((await s.credentials.get('new'))?.aaguid, 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4');
  });

  t.test('credential store: public keys only on get, counters, unique ids', async (t) => {
    const s = await open();
    await s.identities.create(identity('usr_a', 'ada'));
    const cred = (credId: string, createdAt: number) => ({
      credId,
      identityId: 'usr_a',
      publicKey: new Uint8Array([1, 2, 3]),
      counter: 0,
      transports: ['internal'],
      backupEligible: true,
      backedUp: false,
      label: credId,
      createdAt,
      lastUsedAt: null,
    });
    t.ok(await s.credentials.insert(cred('c2', 2)));
    t.ok(await s.credentials.insert(cred('c1', 1)));
    t.notOk(await s.credentials.insert(cred('c1', 3)), 'a credential id is registered once');
    const listed = await s.credentials.listByIdentity('usr_a');
    t.same(
      listed.map((c) => c.credId),
      ['c1', 'c2'],
      'in creation order',
    );
    t.notOk(
      listed.some((c) => 'publicKey' in c),
      'listings never carry the public key',
    );
    t.same((await s.credentials.get('c1'))?.publicKey, new Uint8Array([1, 2, 3]));
    t.equal(await s.credentials.countByIdentity('usr_a'), 2);
    t.ok(await s.credentials.rename('usr_a', 'c1', 'Laptop'));
    t.notOk(await s.credentials.rename('usr_b', 'c1', 'Stolen'), 'only the owner renames');
    await s.credentials.recordUse('c1', { counter: 7, backedUp: true, at: 50 });
    const used = await s.credentials.get('c1');
    t.same(
      [used?.label, used?.counter, used?.backedUp, used?.lastUsedAt, used?.transports],
      ['Laptop', 7, true, 50, ['internal']],
    );
    t.notOk(await s.credentials.remove('usr_b', 'c1'), 'only the owner removes');
    t.ok(await s.credentials.remove('usr_a', 'c1'));
    t.equal(await s.credentials.get('c1'), null);
  });

  t.test('session store: live look-up by hash, idle and absolute expiry, revocation', async (t) => {
    const s = await open();
    await s.identities.create(identity('usr_a', 'ada'));
    await s.sessions.insert(session('s1', 'd1'));
    await s.sessions.insert(session('s2', 'd1'));
    await s.sessions.insert(session('s3', 'd2'));
    await t.rejects(s.sessions.insert(session('s1', 'd1')), 'session ids are unique');
    t.equal((await s.sessions.findLive('hash-s1', 150))?.sessionId, 's1');
    t.same((await s.sessions.findLive('hash-s1', 150))?.amr, ['pop', 'user']);
    t.equal(await s.sessions.findLive('hash-s1', 200), null, 'idle expiry');
    await s.sessions.touch('s1', 190, 5000);
    const touched = await s.sessions.findLive('hash-s1', 500);
    t.same([touched?.lastSeenAt, touched?.idleExpiresAt], [190, 1000], 'idle expiry never passes the absolute one');
    t.equal(await s.sessions.findLive('hash-s1', 1000), null, 'absolute expiry');

    const renewal = {
      tokenHash: 'hash-s1-next',
      assurance: 'passkey' as const,
      amr: ['pop', 'user', 'otp'],
      authTime: 300,
      stepUpAt: 300,
      credId: 'c2',
      lastSeenAt: 300,
      idleExpiresAt: 400,
      absoluteExpiresAt: 1300,
    };
    t.notOk(
      await s.sessions.renewToken('s1', 'hash-s2', renewal, 190),
      'a renewal needs the token the session holds, not another one',
    );
    t.ok(await s.sessions.renewToken('s1', 'hash-s1', renewal, 190));
    t.equal(await s.sessions.findLive('hash-s1', 191), null, 'the token presented before finds nothing');
    const renewed = await s.sessions.findLive('hash-s1-next', 301);
    t.same(
      [
        renewed?.sessionId,
        renewed?.identityId,
        renewed?.deviceId,
        renewed?.createdAt,
        renewed?.stepUpAt,
        renewed?.authTime,
        renewed?.amr,
        renewed?.credId,
        renewed?.lastSeenAt,
        renewed?.idleExpiresAt,
        renewed?.absoluteExpiresAt,
      ],
      ['s1', 'usr_a', 'd1', 100, 300, 300, ['pop', 'user', 'otp'], 'c2', 300, 400, 1300],
      'the same session, with the new token and what the authentication proved',
    );
    t.notOk(
      await s.sessions.renewToken('s1', 'hash-s1', { ...renewal, tokenHash: 'hash-s1-third' }, 192),
      'the old token cannot be renewed again (of two renewals, one wins)',
    );
    t.notOk(
      await s.sessions.renewToken('s2', 'hash-s2', { ...renewal, tokenHash: 'hash-s2-next' }, 200),
      'nor an expired session',
    );
    // Two renewals of one token in concurrent transactions: one swaps it, the other finds it gone.
    const unchanged = { ...renewal, lastSeenAt: 100, idleExpiresAt: 200, absoluteExpiresAt: 1000 };
    const raced = await Promise.all(
      ['hash-s3-a', 'hash-s3-b'].map((tokenHash) =>
        s.transaction((tx) => tx.sessions.renewToken('s3', 'hash-s3', { ...unchanged, tokenHash }, 150)),
      ),
    );
    t.same(raced.filter(Boolean).length, 1, 'of two concurrent renewals of the same token, exactly one wins');
    const winner = raced[0] ? 'hash-s3-a' : 'hash-s3-b';
    t.equal((await s.sessions.findLive(winner, 150))?.sessionId, 's3');

    t.same(
      (await s.sessions.listLive('usr_a', 150)).map((x) => x.sessionId),
      ['s1', 's2', 's3'],
    );
    t.notOk(await s.sessions.revoke('usr_b', 's2', 150), 'only the owner revokes');
    t.ok(await s.sessions.revoke('usr_a', 's2', 150));
    t.notOk(await s.sessions.revoke('usr_a', 's2', 151), 'revoking twice finds nothing');
    t.equal(await s.sessions.findLive('hash-s2', 151), null);
    t.equal(await s.sessions.isLive('s2', 151), false, 'a revoked session is not live');
    t.equal(await s.sessions.isLive('s3', 151), true);
    t.equal(await s.sessions.isLive('s3', 200), false, 'nor an expired one');
    t.equal(await s.sessions.isLive('nope', 151), false);
    t.equal(await s.sessions.revokeDevice('usr_a', 'd1', 160), 1, "revokes the device's remaining live session");
    t.same(
      (await s.sessions.listLive('usr_a', 161)).map((x) => x.sessionId),
      ['s3'],
    );
    t.equal(await s.sessions.revokeAll('usr_b', 162), 0, "only the account's own sessions");
    t.equal(await s.sessions.revokeAll('usr_a', 162), 1);
    t.same(await s.sessions.listLive('usr_a', 163), []);
  });

  t.test('identity store: account state, and deletion that takes everything hanging on the identity', async (t) => {
    const s = await open();
    await s.identities.create(identity('usr_a', 'ada'));
    t.equal(await s.identities.state('usr_a'), 'active', 'a new account is active');
    t.equal(await s.identities.state('usr_x'), null);
    t.ok(await s.identities.setState('usr_a', 'disabled', 20));
    t.notOk(await s.identities.setState('usr_a', 'disabled', 21), 'already disabled');
    t.notOk(await s.identities.setState('usr_x', 'disabled', 21), 'unknown identity');
    t.equal(await s.identities.state('usr_a'), 'disabled');
    await s.identities.create(identity('usr_sum', 'sumi'));
    t.same(
      (await s.identities.summaries(['usr_sum', 'usr_x', 'usr_a'])).sort((x, y) =>
        x.identityId < y.identityId ? -1 : 1,
      ),
      [
        { identityId: 'usr_a', username: 'ada', state: 'disabled' },
        { identityId: 'usr_sum', username: 'sumi', state: 'active' },
      ],
      'summaries: many accounts in one read, unknown ids left out',
    );
    t.same(await s.identities.summaries([]), []);
    t.ok(await s.identities.setState('usr_a', 'active', 22));
    t.ok(await s.identities.rename('usr_a', 'ada2', 23));
    await s.credentials.insert({
      credId: 'c1',
      identityId: 'usr_a',
      publicKey: new Uint8Array([1]),
      counter: 0,
      transports: [],
      backupEligible: true,
      backedUp: true,
      label: 'x',
      createdAt: 1,
      lastUsedAt: null,
    });
    await s.sessions.insert({
      sessionId: 's1',
      tokenHash: 'h1',
      identityId: 'usr_a',
      deviceId: 'd1',
      assurance: 'passkey',
      amr: [],
      authTime: 1,
      stepUpAt: null,
      credId: null,
      createdAt: 1,
      lastSeenAt: 1,
      idleExpiresAt: 100,
      absoluteExpiresAt: 100,
      revokedAt: null,
    });
    await s.devices.upsert('usr_a', 'd1', 1);
    t.ok(await s.identities.remove('usr_a'));
    t.notOk(await s.identities.remove('usr_a'), 'removing twice finds nothing');
    t.equal(await s.identities.get('usr_a'), null);
    t.equal(await s.identities.state('usr_a'), null);
    t.equal(await s.credentials.get('c1'), null);
    t.equal(await s.sessions.findLive('h1', 2), null);
    t.same(await s.devices.list('usr_a'), []);
    t.ok(await s.identities.create(identity('usr_b', 'ada')), 'the name and its aliases are free again');
    t.ok(await s.identities.create(identity('usr_c', 'ada2')));
  });

  t.test('device store: upsert keeps first seen, per identity', async (t) => {
    const s = await open();
    await s.identities.create(identity('usr_a', 'ada'));
    await s.identities.create(identity('usr_b', 'grace'));
    await s.devices.upsert('usr_a', 'd1', 10);
    await s.devices.upsert('usr_a', 'd1', 20);
    await s.devices.upsert('usr_a', 'd2', 15);
    await s.devices.upsert('usr_b', 'd1', 30);
    t.same(await s.devices.list('usr_a'), [
      { deviceId: 'd1', identityId: 'usr_a', createdAt: 10, lastSeenAt: 20, userAgent: null },
      { deviceId: 'd2', identityId: 'usr_a', createdAt: 15, lastSeenAt: 15, userAgent: null },
    ]);
    await s.devices.upsert('usr_a', 'd2', 40, 'Firefox/128');
    await s.devices.upsert('usr_a', 'd2', 50);
    t.same(
      (await s.devices.list('usr_a')).map((d) => [d.deviceId, d.lastSeenAt, d.userAgent]),
      [
        ['d1', 20, null],
        ['d2', 50, 'Firefox/128'],
      ],
      'a sign-in without a User-Agent keeps the one kept',
    );
    t.notOk(await s.devices.remove('usr_a', 'd3'));
    t.ok(await s.devices.remove('usr_a', 'd1'));
    t.same(
      (await s.devices.list('usr_a')).map((d) => d.deviceId),
      ['d2'],
    );
    t.same(
      (await s.devices.list('usr_b')).map((d) => d.deviceId),
      ['d1'],
      "another identity's ledger is untouched",
    );
  });

  t.test('account writes in a failed transaction leave nothing behind', async (t) => {
    const s = await open();
    await t.rejects(
      s.transaction(async (tx) => {
        await tx.identities.create(identity('usr_x', 'xavier'));
        await tx.devices.upsert('usr_x', 'd1', 1);
        throw new Error('abort');
      }),
    );
    t.equal(await s.identities.findByUsername('xavier'), null);
    t.equal(await s.identities.count(), 0);
  });
}
