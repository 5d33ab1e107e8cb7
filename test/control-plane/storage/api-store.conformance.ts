import type { Test } from 'tap';
import type { Storage, StoredApi } from '../../../control-plane/src/storage/interface.js';

const api = (apiId: string, resource: string, orgId: string | null = null, createdAt = 1000): StoredApi => ({
  apiId,
  resource,
  name: 'Notes',
  orgId,
  scopes: [
    { name: 'notes.read', description: { en: 'Read your notes', de: 'Deine Notizen lesen' } },
    { name: 'notes.write', description: 'Change your notes — ünïcode ✓' },
  ],
  allowedClients: ['cl_a'],
  allowedOrgs: ['acme'],
  revision: 1,
  createdAt,
  updatedAt: createdAt,
});

/** Behaviour every ApiStore backend must show. */
export function apiStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test('api store: an API is kept as declared, one per resource', async (t) => {
    const { apis } = await open();
    t.equal(await apis.insert(api('api_a', 'https://notes.example')), true);
    t.same(await apis.get('api_a'), api('api_a', 'https://notes.example'));
    t.same(await apis.getByResource('https://notes.example'), api('api_a', 'https://notes.example'));
    t.equal(await apis.get('api_nope'), null);
    t.equal(await apis.getByResource('https://other.example'), null);
    t.equal(await apis.insert(api('api_b', 'https://notes.example')), false, 'a resource is declared once');
  });

  t.test("api store: lists every API, the operator's or one org's", async (t) => {
    const { apis } = await open();
    await apis.insert(api('api_op', 'https://op.example', null, 1));
    await apis.insert(api('api_org', 'https://org.example', 'org_x', 2));
    t.same(
      (await apis.list()).map((a) => a.apiId),
      ['api_op', 'api_org'],
    );
    t.same(
      (await apis.list(null)).map((a) => a.apiId),
      ['api_op'],
    );
    t.same(
      (await apis.list('org_x')).map((a) => a.apiId),
      ['api_org'],
    );
  });

  t.test('api store: an update needs the current revision; removal is once', async (t) => {
    const { apis } = await open();
    await apis.insert(api('api_u', 'https://u.example'));
    const changed = { ...api('api_u', 'https://u.example'), name: 'Renamed', scopes: [], updatedAt: 2000 };
    const updated = await apis.update(changed, 1);
    t.equal(updated?.name, 'Renamed');
    t.equal(updated?.revision, 2);
    t.same(updated?.scopes, []);
    t.equal(await apis.update(changed, 1), null, 'a stale revision changes nothing');
    t.equal(await apis.remove('api_u'), true);
    t.equal(await apis.remove('api_u'), false);
    t.equal(await apis.get('api_u'), null);
  });

  t.test('api store: an insert inside a rolled-back transaction leaves nothing', async (t) => {
    const storage = await open();
    await t.rejects(
      storage.transaction(async (tx) => {
        await tx.apis.insert(api('api_tx', 'https://tx.example'));
        throw new Error('roll back');
      }),
    );
    t.equal(await storage.apis.get('api_tx'), null);
  });
}
