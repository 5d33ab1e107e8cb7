import { sha256Hex } from '#lib/crypto/sha256.js';
import { identity, session } from './fixtures/accounts.js';
import type { Storage, StoredAuthorizationCode, StoredGrant } from '../../../control-plane/src/storage/interface.js';

interface Tap {
  test(name: string, fn: (t: any) => Promise<void>): unknown;
}

const code = (hash: string, at: number): StoredAuthorizationCode => ({
  codeHash: hash,
  clientId: 'cl_1',
  redirectUri: 'https://app.example.com/cb',
  identityId: 'usr_1',
  sessionId: 'ses_1',
  scope: 'openid offline_access',
  resource: null,
  nonce: 'n',
  codeChallenge: 'c',
  dpopJkt: null,
  assurance: 'passkey',
  amr: ['pop', 'user'],
  authTime: at,
  createdAt: at,
  expiresAt: at + 60_000,
  consumedAt: null,
  grantId: null,
  offline: false,
});

const grant = (id: string, at: number): StoredGrant => ({
  grantId: id,
  clientId: 'cl_1',
  identityId: 'usr_1',
  sessionId: 'ses_1',
  scope: 'openid offline_access',
  resource: null,
  assurance: 'passkey',
  amr: ['pop'],
  authTime: at,
  createdAt: at,
  expiresAt: at + 86_400_000,
  revokedAt: null,
  offline: false,
});

const receiptHash = (grantId: string) => sha256Hex(`receipt of ${grantId}`);

/** The OIDC store's contract, for every backend: one-time codes and refresh tokens are consumed exactly once. */
export function oidcStoreConformance(t: Tap, open: () => Promise<Storage>): void {
  t.test('a code is consumed by exactly one of two concurrent exchanges; later ones see a replay', async (t) => {
    const storage = await open();
    await storage.oidc.insertCode(code('h1', 1000));
    const results = await Promise.all([
      storage.oidc.consumeCode('h1', 2000, 'gr_1'),
      storage.oidc.consumeCode('h1', 2000, 'gr_2'),
    ]);
    t.same(results.map((r) => r.status).sort(), ['consumed', 'replayed']);
    const [linked] = results.flatMap((r) => (r.status === 'consumed' ? [r.code.grantId] : []));
    t.match(linked, /^gr_[12]$/, 'the winner links its grant in the same update');
    const later = await storage.oidc.consumeCode('h1', 3000);
    t.match(later, {
      status: 'replayed',
      code: { grantId: linked, consumedAt: 2000, amr: ['pop', 'user'] },
    });
    t.same(await storage.oidc.consumeCode('nope', 3000), { status: 'unknown' });
  });

  t.test('a code is read without being spent, and spent with the grant it links in the same update', async (t) => {
    const storage = await open();
    await storage.oidc.insertCode(code('h2', 1000));
    t.match(await storage.oidc.findCode('h2'), {
      codeHash: 'h2',
      consumedAt: null,
      grantId: null,
      amr: ['pop', 'user'],
    });
    t.match(await storage.oidc.findCode('h2'), { consumedAt: null }, 'reading spends nothing');
    t.match(await storage.oidc.consumeCode('h2', 2000, 'gr_9'), {
      status: 'consumed',
      code: { grantId: 'gr_9', consumedAt: 2000 },
    });
    t.match(await storage.oidc.findCode('h2'), { consumedAt: 2000, grantId: 'gr_9' });
    t.match(
      await storage.oidc.consumeCode('h2', 3000, 'gr_10'),
      { status: 'replayed', code: { grantId: 'gr_9' } },
      'a replay links nothing',
    );
    t.equal(await storage.oidc.findCode('nope'), null);
  });

  t.test('a code is redeemed with its writes exactly once; the loser writes nothing', async (t) => {
    const storage = await open();
    await storage.oidc.insertCode(code('h3', 1000));
    const redeem = (grantId: string) =>
      storage.redeemCode('h3', 2000, grantId, async (tx) => {
        await tx.oidc.insertGrant(grant(grantId, 2000));
        await tx.oidc.insertRefreshToken({
          tokenHash: `rt-${grantId}`,
          grantId,
          dpopJkt: null,
          createdAt: 2000,
          idleExpiresAt: 9000,
          usedAt: null,
        });
        await tx.receipts.append({ kind: 'token.issued' }, receiptHash(grantId), 2000, `{"g":"${grantId}"}`);
        return grantId;
      });
    const results = await Promise.all([redeem('gr_a'), redeem('gr_b')]);
    t.same(results.map((r) => r.consumption.status).sort(), ['consumed', 'replayed']);
    const winner = results.find((r) => r.consumption.status === 'consumed')!;
    const loser = results.find((r) => r.consumption.status === 'replayed')!;
    t.notOk('written' in loser, "the loser's writes report nothing");
    const won = winner.written!;
    const lost = won === 'gr_a' ? 'gr_b' : 'gr_a';
    t.match(winner.consumption, { code: { grantId: won, consumedAt: 2000 } });
    t.match(await storage.oidc.findRefreshGrant(`rt-${won}`), { grant: { grantId: won } });
    t.equal(await storage.oidc.getGrant(lost), null, "the loser's grant was not written");
    t.equal(await storage.oidc.findRefreshToken(`rt-${lost}`), null);
    t.ok(await storage.receipts.get(receiptHash(won)));
    t.notOk(await storage.receipts.get(receiptHash(lost)), 'nor its receipt');
    t.same(await storage.redeemCode('nope', 2000, 'gr_c', async () => 'x'), { consumption: { status: 'unknown' } });
  });

  t.test('a refresh token rotates with its writes exactly once, and a failed write spends nothing', async (t) => {
    const storage = await open();
    await storage.identities.create(identity('usr_1', 'ada'));
    await storage.sessions.insert({
      ...session('ses_1', 'dev_1', 'usr_1'),
      idleExpiresAt: 3000,
      absoluteExpiresAt: 5000,
    });
    await storage.oidc.insertGrant(grant('gr_r', 1000));
    const token = (tokenHash: string) => ({
      tokenHash,
      grantId: 'gr_r',
      dpopJkt: null,
      createdAt: 2000,
      idleExpiresAt: 9000,
      usedAt: null,
    });
    await storage.oidc.insertRefreshToken(token('r10'));
    const rotate = (successor: string) =>
      storage.rotateRefreshToken('r10', 2000, async (tx) => {
        await tx.sessions.touch('ses_1', 2000, 9000);
        await tx.oidc.insertRefreshToken(token(successor));
        return successor;
      });
    const results = await Promise.all([rotate('r11'), rotate('r12')]);
    t.same(results.map((r) => r.consumption.status).sort(), ['consumed', 'reused']);
    const won = results.find((r) => r.consumption.status === 'consumed')!.written!;
    t.equal(
      await storage.oidc.findRefreshToken(won === 'r11' ? 'r12' : 'r11'),
      null,
      "the loser's successor is not there",
    );
    t.match(await storage.oidc.findRefreshToken(won), { usedAt: null });
    t.match(
      await storage.sessions.findLive('hash-ses_1', 2000),
      { lastSeenAt: 2000, idleExpiresAt: 5000 },
      'touched once, capped at the absolute end',
    );

    await storage.oidc.insertRefreshToken(token('r20'));
    await t.rejects(
      storage.rotateRefreshToken('r20', 2500, async (tx) => {
        await tx.oidc.insertRefreshToken(token(won));
      }),
      'a write that fails (a taken key) fails the rotation',
    );
    t.match(await storage.oidc.findRefreshToken('r20'), { usedAt: null }, 'and leaves the token unspent');
    t.same(await storage.rotateRefreshToken('nope', 2000, async () => 'x'), { consumption: { status: 'unknown' } });
  });

  t.test(
    'a code and a refresh token are read with their subject: account state, session, profile and addresses',
    async (t) => {
      const storage = await open();
      await storage.identities.create({ ...identity('usr_1', 'ada'), displayName: 'Ada L.' });
      await storage.emails.add({
        emailId: 'eml_2',
        identityId: 'usr_1',
        email: 'b@example.com',
        createdAt: 20,
        verifiedAt: 30,
      });
      await storage.emails.add({
        emailId: 'eml_1',
        identityId: 'usr_1',
        email: 'a@example.com',
        createdAt: 10,
        verifiedAt: null,
      });
      // Live from 100 until its idle end at 200.
      await storage.sessions.insert(session('ses_1', 'dev_1', 'usr_1'));
      await storage.oidc.insertCode(code('c5', 100));
      await storage.oidc.insertGrant(grant('gr_6', 100));
      const token = {
        tokenHash: 'r6',
        grantId: 'gr_6',
        dpopJkt: null,
        createdAt: 100,
        idleExpiresAt: 5000,
        usedAt: null,
      };
      await storage.oidc.insertRefreshToken(token);
      const subject = async (sessionLive: boolean) => ({
        state: await storage.identities.state('usr_1'),
        sessionLive,
        identity: await storage.identities.get('usr_1'),
        emails: await storage.emails.listByIdentity('usr_1'),
      });

      t.same(await storage.findCodeWithSubject('c5', 150), { code: code('c5', 100), subject: await subject(true) });
      t.same(await storage.findRefreshWithSubject('r6', 150), {
        token,
        grant: grant('gr_6', 100),
        subject: await subject(true),
      });
      t.same(
        (await storage.findCodeWithSubject('c5', 150))?.subject.emails.map((e) => e.emailId),
        ['eml_1', 'eml_2'],
        'addresses in the order listByIdentity gives',
      );
      t.equal((await storage.findCodeWithSubject('c5', 200))?.subject.sessionLive, false, 'past the idle end');
      t.equal((await storage.findRefreshWithSubject('r6', 200))?.subject.sessionLive, false);

      await storage.sessions.revoke('usr_1', 'ses_1', 160);
      await storage.identities.setState('usr_1', 'disabled', 170);
      t.match(await storage.findCodeWithSubject('c5', 180), { subject: { state: 'disabled', sessionLive: false } });
      t.match(await storage.findRefreshWithSubject('r6', 180), { subject: { state: 'disabled', sessionLive: false } });
      t.equal(await storage.findCodeWithSubject('nope', 150), null);
      t.equal(await storage.findRefreshWithSubject('nope', 150), null);
    },
  );

  t.test('a refresh token is read with its grant', async (t) => {
    const storage = await open();
    await storage.oidc.insertGrant({ ...grant('gr_5', 1000), offline: true });
    await storage.oidc.insertRefreshToken({
      tokenHash: 'r5',
      grantId: 'gr_5',
      dpopJkt: 'jkt-5',
      createdAt: 1500,
      idleExpiresAt: 5000,
      usedAt: null,
    });
    t.same(await storage.oidc.findRefreshGrant('r5'), {
      token: { tokenHash: 'r5', grantId: 'gr_5', dpopJkt: 'jkt-5', createdAt: 1500, idleExpiresAt: 5000, usedAt: null },
      grant: { ...grant('gr_5', 1000), offline: true },
    });
    t.equal(await storage.oidc.extendRefreshToken('r5', 6000), true, 'an unused token has its idle end moved');
    t.equal((await storage.oidc.findRefreshToken('r5'))?.idleExpiresAt, 6000);
    await storage.oidc.consumeRefreshToken('r5', 2000);
    t.equal((await storage.oidc.findRefreshGrant('r5'))?.token.usedAt, 2000);
    t.equal(await storage.oidc.extendRefreshToken('r5', 7000), false, 'a used one is not extended');
    t.equal(await storage.oidc.extendRefreshToken('nope', 7000), false);
    t.equal(await storage.oidc.findRefreshGrant('nope'), null);
  });

  t.test('refresh tokens rotate once; grants revoke once', async (t) => {
    const storage = await open();
    await storage.oidc.insertGrant(grant('gr_1', 1000));
    await storage.oidc.insertRefreshToken({
      tokenHash: 'r1',
      grantId: 'gr_1',
      dpopJkt: null,
      createdAt: 1000,
      idleExpiresAt: 5000,
      usedAt: null,
    });
    const results = await Promise.all([
      storage.oidc.consumeRefreshToken('r1', 2000),
      storage.oidc.consumeRefreshToken('r1', 2000),
    ]);
    t.same(results.map((r) => r.status).sort(), ['consumed', 'reused']);
    t.same(await storage.oidc.consumeRefreshToken('r2', 2000), { status: 'unknown' });
    t.equal(await storage.oidc.revokeGrant('gr_1', 3000), true);
    t.equal(await storage.oidc.revokeGrant('gr_1', 4000), false);
    t.equal((await storage.oidc.getGrant('gr_1'))?.revokedAt, 3000);
  });

  t.test(
    "an account's grants revoke together and its codes, grants, tokens and approvals can be forgotten",
    async (t) => {
      const storage = await open();
      await storage.oidc.insertGrant(grant('gr_1', 1000));
      await storage.oidc.insertGrant(grant('gr_2', 1000));
      await storage.oidc.insertGrant({ ...grant('gr_3', 1000), identityId: 'usr_2' });
      await storage.oidc.revokeGrant('gr_2', 1500);
      t.equal(await storage.oidc.revokeGrantsOf('usr_1', 2000), 1, 'only live grants');
      t.equal((await storage.oidc.getGrant('gr_1'))?.revokedAt, 2000);
      t.equal((await storage.oidc.getGrant('gr_2'))?.revokedAt, 1500);
      t.equal((await storage.oidc.getGrant('gr_3'))?.revokedAt, null, "another account's grant stays");
      await storage.oidc.insertRefreshToken({
        tokenHash: 'r1',
        grantId: 'gr_1',
        dpopJkt: null,
        createdAt: 1000,
        idleExpiresAt: 5000,
        usedAt: null,
      });
      await storage.oidc.insertCode(code('c1', 1000));
      await storage.oidc.recordApproval('usr_1', 'cl_1', { scopes: ['openid'], resources: [] }, 1000);
      await storage.oidc.recordApproval('usr_2', 'cl_1', { scopes: ['openid'], resources: [] }, 1000);
      await storage.oidc.forgetIdentity('usr_1');
      t.equal(await storage.oidc.getGrant('gr_1'), null);
      t.equal(await storage.oidc.findRefreshToken('r1'), null);
      t.same(await storage.oidc.consumeCode('c1', 2000), { status: 'unknown' });
      t.equal(await storage.oidc.approval('usr_1', 'cl_1'), null);
      t.same(await storage.oidc.approval('usr_2', 'cl_1'), { scopes: ['openid'], resources: [] });
      t.ok(await storage.oidc.getGrant('gr_3'));
    },
  );

  t.test(
    "a session's end revokes its grants (offline ones excepted) and drops its pending codes; a client's revocation revokes all of its grants",
    async (t) => {
      const storage = await open();
      await storage.oidc.insertGrant(grant('gr_a', 1000));
      await storage.oidc.insertGrant({ ...grant('gr_offline', 1000), offline: true });
      await storage.oidc.insertGrant({ ...grant('gr_other', 1000), sessionId: 'ses_2' });
      await storage.oidc.insertGrant({ ...grant('gr_client2', 1000), clientId: 'cl_2', sessionId: 'ses_3' });
      await storage.oidc.insertCode(code('pending', 1000));
      await storage.oidc.insertCode({ ...code('pending2', 1000), sessionId: 'ses_2' });
      const ended = await storage.oidc.endSessionGrants(['ses_1', 'ses_1'], 2000);
      t.same(
        ended.map((g) => g.grantId),
        ['gr_a'],
      );
      t.equal(ended[0]!.revokedAt, 2000);
      t.equal((await storage.oidc.getGrant('gr_offline'))?.revokedAt, null, 'an offline grant outlives its session');
      t.equal((await storage.oidc.getGrant('gr_offline'))?.offline, true);
      t.equal((await storage.oidc.getGrant('gr_other'))?.revokedAt, null, 'other sessions untouched');
      t.same(
        await storage.oidc.consumeCode('pending', 2000),
        { status: 'unknown' },
        'a pending code of the session is gone',
      );
      t.equal((await storage.oidc.consumeCode('pending2', 2000)).status, 'consumed', "another session's code stays");
      t.same(await storage.oidc.endSessionGrants(['ses_1'], 3000), [], 'nothing twice');
      const client = await storage.oidc.revokeClientGrants('cl_1', 4000);
      t.same(client.map((g) => g.grantId).sort(), ['gr_offline', 'gr_other']);
      t.equal((await storage.oidc.getGrant('gr_client2'))?.revokedAt, null);
    },
  );

  t.test("an account's live grants, and the source an exchanged grant keeps", async (t) => {
    const storage = await open();
    await storage.oidc.insertGrant(grant('gr_live', 1000));
    await storage.oidc.insertGrant({ ...grant('gr_exchanged', 1000), sourceGrantId: 'gr_live' });
    await storage.oidc.insertGrant(grant('gr_revoked', 1000));
    await storage.oidc.revokeGrant('gr_revoked', 1500);
    await storage.oidc.insertGrant({ ...grant('gr_expired', 1000), expiresAt: 1500 });
    await storage.oidc.insertGrant({ ...grant('gr_else', 1000), identityId: 'usr_2' });
    t.same(
      (await storage.oidc.liveGrantsOf('usr_1', 2000)).map((g) => g.grantId).sort(),
      ['gr_exchanged', 'gr_live'],
      'neither revoked nor expired, of this account only',
    );
    t.equal((await storage.oidc.getGrant('gr_exchanged'))?.sourceGrantId, 'gr_live');
    t.notOk('sourceGrantId' in (await storage.oidc.getGrant('gr_live'))!, 'absent on a grant of its own');
  });

  t.test('approvals, revoked access tokens and purging', async (t) => {
    const storage = await open();
    t.equal(await storage.oidc.approval('usr_1', 'cl_1'), null);
    await storage.oidc.recordApproval('usr_1', 'cl_1', { scopes: ['openid', 'email'], resources: [] }, 1000);
    await storage.oidc.recordApproval(
      'usr_1',
      'cl_1',
      { scopes: ['openid', 'email', 'profile'], resources: ['https://api.example.com'] },
      2000,
    );
    t.same(
      await storage.oidc.approval('usr_1', 'cl_1'),
      { scopes: ['openid', 'email', 'profile'], resources: ['https://api.example.com'] },
      'scopes and resources approved',
    );
    t.equal(await storage.oidc.approval('usr_1', 'cl_2'), null, 'per client');
    await storage.oidc.recordApproval('usr_1', 'cl_0', { scopes: ['openid'], resources: [] }, 2000);
    await storage.oidc.recordApproval('usr_2', 'cl_2', { scopes: ['openid'], resources: [] }, 2000);
    t.same(await storage.oidc.approvedClients('usr_1'), ['cl_0', 'cl_1']);
    t.equal(await storage.oidc.removeApproval('usr_1', 'cl_0'), true);
    t.equal(await storage.oidc.removeApproval('usr_1', 'cl_0'), false, 'gone already');
    t.same(await storage.oidc.approvedClients('usr_1'), ['cl_1']);
    t.same(await storage.oidc.approvedClients('usr_9'), []);
    await storage.oidc.revokeAccessToken('gr_1.x', 5000);
    await storage.oidc.revokeAccessToken('gr_1.x', 5000);
    t.equal(await storage.oidc.isAccessTokenRevoked('gr_1.x'), true);
    await storage.oidc.insertCode(code('old', 0));
    t.ok((await storage.oidc.purgeExpired(10_000_000)) >= 2);
    t.equal(await storage.oidc.isAccessTokenRevoked('gr_1.x'), false);
  });
}
