import type { Storage, StoredAuthorizationCode, StoredGrant } from '../../../control-plane/src/storage/types.js';

interface Tap {
  test(name: string, fn: (t: any) => Promise<void>): unknown;
}

const code = (hash: string, at: number): StoredAuthorizationCode => ({
  codeHash: hash, clientId: 'cl_1', redirectUri: 'https://app.example.com/cb', identityId: 'usr_1', sessionId: 'ses_1', scope: 'openid offline_access',
  resource: null, nonce: 'n', codeChallenge: 'c', dpopJkt: null, assurance: 'passkey', amr: ['pop', 'user'], authTime: at, createdAt: at, expiresAt: at + 60_000,
  consumedAt: null, grantId: null,
});

const grant = (id: string, at: number): StoredGrant => ({
  grantId: id, clientId: 'cl_1', identityId: 'usr_1', sessionId: 'ses_1', scope: 'openid offline_access', resource: null, assurance: 'passkey',
  amr: ['pop'], authTime: at, createdAt: at, expiresAt: at + 86_400_000, revokedAt: null,
});

/** The OIDC store's contract, for every backend: one-time codes and refresh tokens are consumed exactly once. */
export function oidcStoreConformance(t: Tap, open: () => Promise<Storage>): void {
  t.test('a code is consumed by exactly one of two concurrent exchanges; later ones see a replay', async (t) => {
    const storage = await open();
    await storage.oidc.insertCode(code('h1', 1000));
    const results = await Promise.all([storage.oidc.consumeCode('h1', 2000), storage.oidc.consumeCode('h1', 2000)]);
    t.same(results.map((r) => r.status).sort(), ['consumed', 'replayed']);
    await storage.oidc.setCodeGrant('h1', 'gr_1');
    const later = await storage.oidc.consumeCode('h1', 3000);
    t.match(later, { status: 'replayed', code: { grantId: 'gr_1', consumedAt: 2000, amr: ['pop', 'user'] } });
    t.same(await storage.oidc.consumeCode('nope', 3000), { status: 'unknown' });
  });

  t.test('refresh tokens rotate once; grants revoke once', async (t) => {
    const storage = await open();
    await storage.oidc.insertGrant(grant('gr_1', 1000));
    await storage.oidc.insertRefreshToken({ tokenHash: 'r1', grantId: 'gr_1', dpopJkt: null, createdAt: 1000, idleExpiresAt: 5000, usedAt: null });
    const results = await Promise.all([storage.oidc.consumeRefreshToken('r1', 2000), storage.oidc.consumeRefreshToken('r1', 2000)]);
    t.same(results.map((r) => r.status).sort(), ['consumed', 'reused']);
    t.same(await storage.oidc.consumeRefreshToken('r2', 2000), { status: 'unknown' });
    t.equal(await storage.oidc.revokeGrant('gr_1', 3000), true);
    t.equal(await storage.oidc.revokeGrant('gr_1', 4000), false);
    t.equal((await storage.oidc.getGrant('gr_1'))?.revokedAt, 3000);
  });

  t.test('an account\'s grants revoke together and its codes, grants, tokens and approvals can be forgotten', async (t) => {
    const storage = await open();
    await storage.oidc.insertGrant(grant('gr_1', 1000));
    await storage.oidc.insertGrant(grant('gr_2', 1000));
    await storage.oidc.insertGrant({ ...grant('gr_3', 1000), identityId: 'usr_2' });
    await storage.oidc.revokeGrant('gr_2', 1500);
    t.equal(await storage.oidc.revokeGrantsOf('usr_1', 2000), 1, 'only live grants');
    t.equal((await storage.oidc.getGrant('gr_1'))?.revokedAt, 2000);
    t.equal((await storage.oidc.getGrant('gr_2'))?.revokedAt, 1500);
    t.equal((await storage.oidc.getGrant('gr_3'))?.revokedAt, null, 'another account\'s grant stays');
    await storage.oidc.insertRefreshToken({ tokenHash: 'r1', grantId: 'gr_1', dpopJkt: null, createdAt: 1000, idleExpiresAt: 5000, usedAt: null });
    await storage.oidc.insertCode(code('c1', 1000));
    await storage.oidc.recordApproval('usr_1', 'cl_1', 'openid', 1000);
    await storage.oidc.recordApproval('usr_2', 'cl_1', 'openid', 1000);
    await storage.oidc.forgetIdentity('usr_1');
    t.equal(await storage.oidc.getGrant('gr_1'), null);
    t.equal(await storage.oidc.findRefreshToken('r1'), null);
    t.same(await storage.oidc.consumeCode('c1', 2000), { status: 'unknown' });
    t.equal(await storage.oidc.approvedScopes('usr_1', 'cl_1'), null);
    t.same(await storage.oidc.approvedScopes('usr_2', 'cl_1'), ['openid']);
    t.ok(await storage.oidc.getGrant('gr_3'));
  });

  t.test('approvals, revoked access tokens and purging', async (t) => {
    const storage = await open();
    t.equal(await storage.oidc.approvedScopes('usr_1', 'cl_1'), null);
    await storage.oidc.recordApproval('usr_1', 'cl_1', 'openid email', 1000);
    await storage.oidc.recordApproval('usr_1', 'cl_1', 'openid email profile', 2000);
    t.same(await storage.oidc.approvedScopes('usr_1', 'cl_1'), ['openid', 'email', 'profile']);
    await storage.oidc.revokeAccessToken('gr_1.x', 5000);
    await storage.oidc.revokeAccessToken('gr_1.x', 5000);
    t.equal(await storage.oidc.isAccessTokenRevoked('gr_1.x'), true);
    await storage.oidc.insertCode(code('old', 0));
    t.ok((await storage.oidc.purgeExpired(10_000_000)) >= 2);
    t.equal(await storage.oidc.isAccessTokenRevoked('gr_1.x'), false);
  });
}
