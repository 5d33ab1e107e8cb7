import type { Test } from 'tap';
import type { Storage, StoredSamlProvider } from '../../../control-plane/src/storage/interface.js';

type Tap = Test;

const provider = (id: string, entityId: string, orgId: string | null, createdAt: number): StoredSamlProvider => ({
  id,
  entityId,
  name: 'SP',
  acsUrls: ['https://sp.example/acs', 'https://sp.example/acs2'],
  sloUrl: null,
  certificatePem: 'PEM',
  nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  attributes: { a: 'username' },
  allowIdpInitiated: false,
  wantSignedRequests: true,
  accessOrgs: null,
  orgId,
  revision: 1,
  createdAt,
  updatedAt: createdAt,
});

/** Behaviour every SamlStore backend must show. */
export function samlStoreConformance(t: Tap, open: () => Promise<Storage>): void {
  t.test('saml keys: insert, list, state changes, removal; sealed bytes round-trip', async (t) => {
    const storage = await open();
    const key = (kid: string, createdAt: number) => ({
      kid,
      state: 'next' as const,
      certificatePem: `CERT ${kid}`,
      sealedPrivateKey: Buffer.from([9, 8, 7]),
      createdAt,
      activatedAt: null,
      retiredAt: null,
      notAfter: 99,
    });
    await storage.saml.insertKey(key('b', 2));
    await storage.saml.insertKey(key('a', 1));
    t.same(
      (await storage.saml.keys()).map((k) => k.kid),
      ['a', 'b'],
    );
    await storage.saml.setKeyState('a', 'current', 10);
    await storage.saml.setKeyState('b', 'retired', 20);
    const [a, b] = await storage.saml.keys();
    t.same([a!.state, a!.activatedAt, a!.retiredAt, a!.notAfter], ['current', 10, null, 99]);
    t.same([b!.state, b!.retiredAt], ['retired', 20]);
    t.same(a!.sealedPrivateKey, Buffer.from([9, 8, 7]));
    await t.rejects(storage.saml.insertKey(key('a', 3)), 'kids are unique');
    await storage.saml.removeKey('a');
    t.same(
      (await storage.saml.keys()).map((k) => k.kid),
      ['b'],
    );
  });

  t.test('saml providers: one per entityID, lookups, org listing, conditional update, removal', async (t) => {
    const storage = await open();
    const now = Date.now();
    await storage.orgs.create(
      { orgId: 'org_1', slug: 'acme', name: 'Acme', website: null, createdAt: now },
      'usr_owner',
    );
    t.equal(await storage.saml.insertProvider(provider('sp_1', 'https://one.example', null, 1)), true);
    t.equal(await storage.saml.insertProvider(provider('sp_2', 'https://two.example', 'org_1', 2)), true);
    t.equal(
      await storage.saml.insertProvider(provider('sp_3', 'https://one.example', null, 3)),
      false,
      'entityID taken',
    );
    t.same(
      await storage.saml.provider('sp_1'),
      provider('sp_1', 'https://one.example', null, 1),
      'round-trips every field',
    );
    t.equal((await storage.saml.providerByEntityId('https://two.example'))?.id, 'sp_2');
    t.equal(await storage.saml.provider('sp_none'), null);
    t.same(
      (await storage.saml.listProviders()).map((p) => p.id),
      ['sp_1', 'sp_2'],
    );
    t.same(
      (await storage.saml.listProviders(['org_1'])).map((p) => p.id),
      ['sp_2'],
    );
    t.same(await storage.saml.listProviders(['org_other']), []);
    const changed = {
      ...provider('sp_1', 'https://one.example', null, 1),
      acsUrls: ['https://one.example/new'],
      allowIdpInitiated: true,
      accessOrgs: [{ slug: 'acme', roles: ['admin' as const, 'owner' as const] }, { slug: 'ops' }],
      updatedAt: 5,
    };
    const updated = await storage.saml.updateProvider(changed, 1);
    t.match(updated, { revision: 2, allowIdpInitiated: true });
    t.same(
      (await storage.saml.provider('sp_1'))!.accessOrgs,
      [{ slug: 'acme', roles: ['admin', 'owner'] }, { slug: 'ops' }],
      'access.orgs round-trips through an update',
    );
    t.equal(await storage.saml.updateProvider(changed, 1), null, 'a stale revision changes nothing');
    t.equal(
      await storage.saml.updateProvider({ ...changed, entityId: 'https://two.example' }, 2),
      'taken',
      "another provider's entityID",
    );
    t.same((await storage.saml.provider('sp_1'))!.acsUrls, ['https://one.example/new']);
    t.equal(await storage.saml.removeProvider('sp_1'), true);
    t.equal(await storage.saml.removeProvider('sp_1'), false);
    const restricted = { ...provider('sp_4', 'https://four.example', null, 4), accessOrgs: [{ slug: 'acme' }] };
    await storage.saml.insertProvider(restricted);
    t.same(await storage.saml.provider('sp_4'), restricted, 'access.orgs round-trips through an insert');
    await storage.transaction(async (tx) => {
      t.equal(await tx.saml.updateProvider(provider('sp_2', 'https://four.example', 'org_1', 2), 1), 'taken');
      t.ok(await tx.saml.provider('sp_2'), 'the transaction is still usable after a refused update');
    });
  });
}
