import type { Test } from 'tap';
import type { Storage } from '../../../control-plane/src/storage/interface.js';
import { identity } from './fixtures/accounts.js';

/** Behaviour every OperatorStore backend must show, with the console's account listing. */
export function operatorStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test(
    'operator store: a role is granted, replaced, counted, listed and revoked; it ends with the account',
    async (t) => {
      const storage = await open();
      for (const [id, name] of [
        ['usr_a', 'ada'],
        ['usr_b', 'bea'],
        ['usr_c', 'cyd'],
      ] as const)
        await storage.identities.create({ ...identity(id, name), createdAt: 1000, updatedAt: 1000 });
      const { operators } = storage;
      t.equal(await operators.roleOf('usr_a'), null);
      await operators.grant({ identityId: 'usr_a', role: 'operator', grantedAt: 2000, grantedBy: null });
      await operators.grant({ identityId: 'usr_b', role: 'operator', grantedAt: 2100, grantedBy: 'usr_a' });
      t.equal(await operators.countOperators(), 2);
      await operators.grant({ identityId: 'usr_b', role: 'auditor', grantedAt: 2200, grantedBy: 'usr_a' });
      t.equal(await operators.roleOf('usr_b'), 'auditor', 'a grant replaces the role');
      t.equal(await operators.countOperators(), 1);
      t.same(await operators.list(), [
        { identityId: 'usr_a', role: 'operator', grantedAt: 2000, grantedBy: null },
        { identityId: 'usr_b', role: 'auditor', grantedAt: 2200, grantedBy: 'usr_a' },
      ]);
      t.equal(await operators.revoke('usr_b'), true);
      t.equal(await operators.revoke('usr_b'), false);
      await storage.identities.remove('usr_a');
      t.equal(await operators.roleOf('usr_a'), null, 'a deleted account takes its role with it');
    },
  );

  t.test('identity store: accounts by username, a page at a time, by prefix', async (t) => {
    const storage = await open();
    for (const name of ['ada', 'adam', 'bea', 'bert', 'cyd'])
      await storage.identities.create({ ...identity(`usr_${name}`, name), createdAt: 1000, updatedAt: 1000 });
    const names = async (query: { after: string | null; prefix: string; limit: number }) =>
      (await storage.identities.listPage(query)).map((a) => a.username);
    t.same(await names({ after: null, prefix: '', limit: 2 }), ['ada', 'adam']);
    t.same(await names({ after: 'adam', prefix: '', limit: 2 }), ['bea', 'bert']);
    t.same(await names({ after: null, prefix: 'be', limit: 10 }), ['bea', 'bert']);
    t.same(await names({ after: 'bea', prefix: 'be', limit: 10 }), ['bert']);
    t.same(await names({ after: 'ada', prefix: 'be', limit: 10 }), ['bea', 'bert'], 'a cursor before the prefix');
    t.same(await names({ after: 'cyd', prefix: 'be', limit: 10 }), [], 'a cursor past the prefix');
    t.match(await storage.identities.listPage({ after: null, prefix: 'cyd', limit: 1 }), [
      { identityId: 'usr_cyd', username: 'cyd', state: 'active', createdAt: 1000 },
    ]);
  });
}
