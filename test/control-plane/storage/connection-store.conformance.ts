import type { Test } from 'tap';
import type { Storage, StoredConnection } from '../../../control-plane/src/storage/interface.js';
import { identity, session } from './fixtures/accounts.js';

const connection = (connectionId: string, orgId: string | null, domains: string[] = []): StoredConnection => ({
  connectionId,
  orgId,
  type: 'oidc',
  name: `Upstream ${connectionId}`,
  settings: { issuer: 'https://idp.example', clientId: 'kp', tokenEndpointAuthMethod: 'client_secret_basic' },
  secretSealed: Buffer.from([1, 2, 3]),
  domains,
  jit: orgId === null ? null : { role: 'member' },
  required: false,
  maxAssurance: 'email',
  sessionMaxHours: 12,
  createdAt: 1000,
  updatedAt: 1000,
});

/** The connections' store (docs/federation.md), for every backend. */
export function connectionStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test('connection store: the operator and each org list their own; a domain finds its org connection', async (t) => {
    const s = await open();
    await s.orgs.create({ orgId: 'org_1', slug: 'acme', name: 'Acme', website: null, createdAt: 1 }, 'usr_owner');
    await s.connections.insert(connection('con_op', null));
    await s.connections.insert(connection('con_org', 'org_1', ['acme.example']));
    t.same(
      (await s.connections.list(null)).map((c) => c.connectionId),
      ['con_op'],
    );
    t.same(
      (await s.connections.list('org_1')).map((c) => c.connectionId),
      ['con_org'],
    );
    const got = await s.connections.get('con_org');
    t.same(got, connection('con_org', 'org_1', ['acme.example']), 'every field round-trips');
    t.equal((await s.connections.forDomain('acme.example'))?.connectionId, 'con_org');
    t.equal(await s.connections.forDomain('other.example'), null);
    await s.connections.update({
      ...got!,
      name: 'Renamed',
      domains: [],
      required: true,
      sessionMaxHours: 8,
      updatedAt: 2000,
    });
    t.equal((await s.connections.get('con_org'))?.name, 'Renamed');
    t.equal((await s.connections.get('con_org'))?.required, true);
    t.equal((await s.connections.get('con_org'))?.sessionMaxHours, 8);
    t.equal(await s.connections.forDomain('acme.example'), null, 'a domain taken off no longer finds it');
    t.equal(await s.connections.remove('con_org'), true);
    t.equal(await s.connections.remove('con_org'), false);
  });

  t.test('connection store: a federated identity links once; a session remembers its connection', async (t) => {
    const s = await open();
    await s.identities.create(identity('usr_a', 'ada'));
    await s.identities.create(identity('usr_b', 'bob'));
    await s.connections.insert(connection('con_1', null));
    t.equal(await s.connections.link('con_1', 'h1', 'usr_a', 10), true);
    t.equal(await s.connections.link('con_1', 'h1', 'usr_b', 11), false, 'one account per upstream subject');
    t.equal(await s.connections.findIdentity('con_1', 'h1'), 'usr_a');
    t.equal(await s.connections.findIdentity('con_1', 'h2'), null);
    t.equal(await s.connections.isLinked('con_1', 'usr_a'), true);
    t.equal(await s.connections.isLinked('con_1', 'usr_b'), false, 'an account no identity of it is linked to');
    t.same(await s.connections.linksOf('usr_a'), [{ connectionId: 'con_1', linkedAt: 10 }]);
    t.same(await s.connections.linksOf('usr_b'), []);
    t.equal(await s.connections.unlink('con_1', 'usr_b'), false, 'no link to remove');
    t.equal(await s.connections.unlink('con_1', 'usr_a'), true);
    t.equal(await s.connections.findIdentity('con_1', 'h1'), null, 'unlinked');
    t.equal(await s.connections.link('con_1', 'h1', 'usr_a', 12), true, 'and linked again');
    // A session's expiry is brought forward, never pushed back (required SSO's cap).
    await s.sessions.insert(session('s9', 'd9'));
    await s.sessions.capExpiry('s9', 5000);
    await s.sessions.capExpiry('s9', 150);
    const capped = (await s.sessions.listLive('usr_a', 0)).find((x) => x.sessionId === 's9')!;
    t.same([capped.absoluteExpiresAt, capped.idleExpiresAt], [150, 150], 'capped, never lengthened');
    await s.sessions.insert(session('s1', 'd1'));
    t.equal(await s.connections.sessionConnection('s1'), null);
    await s.connections.markSession('s1', 'con_1', 20);
    await s.connections.markSession('s1', 'con_1', 30);
    t.equal(await s.connections.sessionConnection('s1'), 'con_1');
    t.same(await s.connections.sessionSignIn('s1'), { connectionId: 'con_1', signedInAt: 30 });
    t.same(
      await s.connections.sessionUpstream('s1'),
      { connectionId: 'con_1', sidHash: null, subHash: null, idTokenSealed: null },
      'a sign-in that named no upstream session',
    );
    await s.sessions.insert(session('s2', 'd1'));
    const sealed = Buffer.from([1, 2, 3]);
    await s.connections.markSession('s1', 'con_1', 40, { sidHash: 'sid1', subHash: 'sub1', idTokenSealed: sealed });
    await s.connections.markSession('s2', 'con_1', 40, { sidHash: 'sid2', subHash: 'sub1', idTokenSealed: null });
    t.same(await s.connections.sessionUpstream('s1'), {
      connectionId: 'con_1',
      sidHash: 'sid1',
      subHash: 'sub1',
      idTokenSealed: sealed,
    });
    const ids = async (connectionId: string, by: { sidHash?: string; subHash?: string }) =>
      (await s.connections.sessionsOfUpstream(connectionId, by, 50)).map((x) => x.sessionId);
    t.same(await ids('con_1', { sidHash: 'sid2', subHash: 'sub1' }), ['s2'], 'by sid first');
    t.same(await ids('con_1', { subHash: 'sub1' }), ['s1', 's2'], 'else by sub');
    t.same(await ids('con_2', { subHash: 'sub1' }), [], 'of that connection only');
    await s.sessions.revoke(session('s2', 'd1').identityId, 's2', 60);
    t.same(
      (await s.connections.sessionsOfUpstream('con_1', { subHash: 'sub1' }, 70)).map((x) => x.sessionId),
      ['s1'],
      'live sessions only',
    );
    t.equal(await s.connections.remove('con_1'), true);
    t.equal(await s.connections.findIdentity('con_1', 'h1'), null, 'removing a connection unlinks its identities');
    t.equal(await s.connections.sessionConnection('s1'), null);
  });
}
