import type { Test } from 'tap';
import type {
  IssuedGatewayConfig,
  Storage,
  StoredGatewayEvidence,
} from '../../../control-plane/src/storage/interface.js';

type Tap = Test;

function issued(clientId: string, version: number, jws = `jws-${version}`): IssuedGatewayConfig {
  return {
    clientId,
    version,
    jws,
    hash: String(version).repeat(64).slice(0, 64),
    policyHash: 'p'.repeat(64),
    policy: { mode: 'canary', canary_percent: 10, routes: [{ path: '/api', scopes: ['read'] }] },
    kid: 'kid-1',
    issuedAt: 1000 * version,
    expiresAt: 1000 * version + 86_400_000,
  };
}

function report(instance: string, issuedAt: number, extra: Partial<StoredGatewayEvidence> = {}): StoredGatewayEvidence {
  return {
    clientId: 'cl_1',
    instance,
    gateway: 'https://gw.example.com',
    keyThumbprint: 't'.repeat(43),
    jti: `jti-${instance}-${issuedAt}`,
    issuedAt,
    expiresAt: issuedAt + 30_000,
    receivedAt: issuedAt + 10,
    config: { version: 1, hash: 'a'.repeat(64), mode: 'enforce' },
    counts: { allowed: 1, refused: { unauthorized: 2 }, observed: {} },
    lastEnforcementAt: null,
    startedAt: 5,
    jws: 'e.j.s',
    ...extra,
  };
}

/** Behaviour every GatewayStore backend must show. */
export function gatewayStoreConformance(t: Tap, open: () => Promise<Storage>): void {
  t.test(
    'gateway store: issued configs are kept per client, the highest version is the latest, a version is issued once',
    async (t) => {
      const storage = await open();
      t.equal(await storage.gateway.latestConfig('cl_1'), null);
      t.equal(await storage.gateway.insertConfig(issued('cl_1', 1)), true);
      t.equal(await storage.gateway.insertConfig(issued('cl_1', 2)), true);
      t.equal(await storage.gateway.insertConfig(issued('cl_2', 7)), true);
      t.same(await storage.gateway.latestConfig('cl_1'), issued('cl_1', 2), 'round-trips, policy included');
      t.equal(
        await storage.gateway.insertConfig(issued('cl_1', 2, 'other-content')),
        false,
        'never two contents for one version',
      );
      t.equal((await storage.gateway.latestConfig('cl_1'))?.jws, 'jws-2');
      t.equal((await storage.gateway.latestConfig('cl_2'))?.version, 7);
    },
  );

  t.test(
    'gateway store: the newest report per instance is kept; an older or replayed one changes nothing',
    async (t) => {
      const storage = await open();
      t.same(await storage.gateway.listEvidence('cl_1', 10), []);
      t.equal(await storage.gateway.recordEvidence(report('i-1', 1000)), true);
      t.same((await storage.gateway.listEvidence('cl_1', 10))[0], report('i-1', 1000), 'round-trips');
      t.equal(
        await storage.gateway.recordEvidence(report('i-1', 2000, { config: null, lastEnforcementAt: 1500 })),
        true,
      );
      t.equal(await storage.gateway.recordEvidence(report('i-1', 1500)), false, 'older');
      t.equal(
        await storage.gateway.recordEvidence(report('i-1', 2000, { config: null, lastEnforcementAt: 1500 })),
        false,
        'same jti',
      );
      t.equal(await storage.gateway.recordEvidence(report('i-2', 1200, { receivedAt: 9000 })), true);
      await storage.gateway.recordEvidence({ ...report('i-9', 1), clientId: 'cl_other' });
      const list = await storage.gateway.listEvidence('cl_1', 10);
      t.same(
        list.map((r) => r.instance),
        ['i-2', 'i-1'],
        'most recently heard from first, this client only',
      );
      t.same(list[1], report('i-1', 2000, { config: null, lastEnforcementAt: 1500 }));
      t.equal((await storage.gateway.listEvidence('cl_1', 1)).length, 1, 'limited');
    },
  );

  t.test('gateway store: reports of instances long gone are forgotten, per client', async (t) => {
    const storage = await open();
    await storage.gateway.recordEvidence(report('old', 1000));
    await storage.gateway.recordEvidence(report('live', 90_000));
    await storage.gateway.recordEvidence({ ...report('other-old', 1000), clientId: 'cl_other' });
    t.equal(await storage.gateway.forgetEvidence('cl_1', 50_000), 1, 'one report expired before then');
    t.same(
      (await storage.gateway.listEvidence('cl_1', 10)).map((r) => r.instance),
      ['live'],
    );
    t.equal((await storage.gateway.listEvidence('cl_other', 10)).length, 1, 'other clients keep theirs');
  });

  t.test('gateway store: a rolled-back transaction issues nothing', async (t) => {
    const storage = await open();
    await t.rejects(
      storage.transaction(async (tx) => {
        await tx.gateway.insertConfig(issued('cl_1', 1));
        throw new Error('abort');
      }),
    );
    t.equal(await storage.gateway.latestConfig('cl_1'), null);
  });

  t.test(
    'gateway store: the directory generation moves with every write a member directory is built from, and with nothing else',
    async (t) => {
      const storage = await open();
      const at = 1_000;
      let last = await storage.gateway.directoryGeneration();
      const moved = async (what: string) => {
        const now = await storage.gateway.directoryGeneration();
        t.ok(now > last, `${what} moves it`);
        last = now;
      };
      const account = (identityId: string, username: string) => ({
        identityId,
        username,
        displayName: '',
        preferences: {},
        founder: false,
        createdAt: at,
        updatedAt: at,
      });
      await storage.identities.create(account('usr_dir_a', 'dir-ada'));
      await moved('an account created');
      await storage.identities.create(account('usr_dir_b', 'dir-grace'));
      await moved('another account');
      await storage.orgs.create(
        { orgId: 'org_dir', slug: 'dir-acme', name: 'Acme', website: null, createdAt: at },
        'usr_dir_a',
      );
      await moved('an org created with its owner');
      await storage.orgs.addMember('org_dir', { identityId: 'usr_dir_b', role: 'member', addedAt: at });
      await moved('a member added');
      await storage.orgs.setRole('org_dir', 'usr_dir_b', 'admin');
      await moved('a role changed');
      await storage.identities.rename('usr_dir_b', 'dir-hopper', at);
      await moved('a username changed');
      await storage.identities.setState('usr_dir_b', 'disabled', at);
      await moved('an account disabled');
      await storage.identities.setState('usr_dir_b', 'active', at);
      await moved('an account enabled again');
      await storage.orgs.removeMember('org_dir', 'usr_dir_b');
      await moved('a member removed');
      await storage.identities.remove('usr_dir_b');
      await moved('an account deleted');

      await storage.identities.setDisplayName('usr_dir_a', 'Ada', at);
      await storage.identities.setPreferences('usr_dir_a', { theme: 'dark' }, at);
      await storage.gateway.insertConfig(issued('cl_1', 1));
      t.equal(await storage.gateway.directoryGeneration(), last, 'a display name, preferences or a config do not');

      await t.rejects(
        storage.transaction(async (tx) => {
          await tx.orgs.removeMember('org_dir', 'usr_dir_a');
          throw new Error('abort');
        }),
      );
      t.equal(await storage.gateway.directoryGeneration(), last, 'a rolled-back removal does not');
    },
  );
}
