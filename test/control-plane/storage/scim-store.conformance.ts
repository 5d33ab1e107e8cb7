import type { Test } from 'tap';
import type { Storage, ScimUserRecord, StoredOrg } from '../../../control-plane/src/storage/interface.js';

const org = (slug: string): StoredOrg => ({ orgId: `org_${slug}`, slug, name: slug, website: null, createdAt: 1000 });

async function identity(storage: Storage, id: string, managedBy: string) {
  await storage.identities.create({
    identityId: id,
    username: id.replace('_', '-'),
    displayName: '',
    preferences: {},
    founder: false,
    managedBy,
    createdAt: 1000,
    updatedAt: 1000,
  });
}

const user = (id: string, orgId: string, userName: string, externalId: string | null = null): ScimUserRecord => ({
  identityId: id,
  orgId,
  userName,
  userNameKey: userName.toLowerCase(),
  externalId,
  attributes: { displayName: userName, emails: [{ type: 'work', value: userName }] },
  createdAt: 2000,
  updatedAt: 2000,
});

/** Behaviour every ScimStore backend must show (and the suspension flag on identities). */
export function scimStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test(
    'scim store: tokens are kept by id, listed per org, revoked once, touched at most once a minute',
    async (t) => {
      const storage = await open();
      await storage.orgs.create(org('acme'), 'id_a');
      await storage.orgs.create(org('beta'), 'id_b');
      const token = {
        tokenId: 'sct_1',
        orgId: 'org_acme',
        secretHash: 'ab'.repeat(32),
        createdBy: 'id_a',
        createdAt: 1000,
        lastUsedAt: null,
        revokedAt: null,
      };
      await storage.scim.addToken(token);
      await storage.scim.addToken({ ...token, tokenId: 'sct_2', orgId: 'org_beta' });
      t.same(await storage.scim.token('sct_1'), token);
      t.equal(await storage.scim.token('sct_x'), null);
      t.same(
        (await storage.scim.tokens('org_acme')).map((x) => x.tokenId),
        ['sct_1'],
      );
      await storage.scim.touchToken('sct_1', 5000);
      await storage.scim.touchToken('sct_1', 30_000);
      t.equal((await storage.scim.token('sct_1'))!.lastUsedAt, 5000, 'not written again within a minute');
      await storage.scim.touchToken('sct_1', 65_000);
      t.equal((await storage.scim.token('sct_1'))!.lastUsedAt, 65_000);
      t.equal(await storage.scim.revokeToken('org_beta', 'sct_1', 7000), false, "another org's token");
      t.equal(await storage.scim.revokeToken('org_acme', 'sct_1', 7000), true);
      t.equal(await storage.scim.revokeToken('org_acme', 'sct_1', 8000), false, 'once');
      t.equal((await storage.scim.token('sct_1'))!.revokedAt, 7000);
    },
  );

  t.test('scim store: a userName is unique per org once folded, found by name and by externalId', async (t) => {
    const storage = await open();
    await storage.orgs.create(org('acme'), 'id_a');
    await storage.orgs.create(org('beta'), 'id_b');
    for (const [id, o] of [
      ['usr_1', 'org_acme'],
      ['usr_2', 'org_acme'],
      ['usr_3', 'org_beta'],
    ] as const)
      await identity(storage, id, o);
    t.equal(await storage.scim.addUser(user('usr_1', 'org_acme', 'Ann@Acme.example', 'ext-1')), true);
    t.equal(await storage.scim.addUser(user('usr_2', 'org_acme', 'ann@acme.EXAMPLE')), false, 'folded name taken');
    t.equal(await storage.scim.addUser(user('usr_3', 'org_beta', 'ann@acme.example', 'ext-1')), true, 'another org');
    t.same(await storage.scim.userByName('org_acme', 'ann@acme.example'), {
      ...user('usr_1', 'org_acme', 'Ann@Acme.example', 'ext-1'),
      suspendedAt: null,
    });
    await storage.identities.setSuspended('usr_1', 4000);
    t.equal(
      (await storage.scim.user('org_acme', 'usr_1'))!.suspendedAt,
      4000,
      "the account's suspension is read with it",
    );
    t.equal(await storage.scim.user('org_beta', 'usr_1'), null, "another org's user is not found");
    t.same(
      (await storage.scim.usersByExternalId('org_acme', 'ext-1')).map((u) => u.identityId),
      ['usr_1'],
    );
    t.equal(await storage.scim.addUser(user('usr_2', 'org_acme', 'bob@acme.example')), true);
    t.same(
      (await storage.scim.users('org_acme')).map((u) => u.identityId),
      ['usr_1', 'usr_2'],
    );
    t.equal(await storage.scim.countUsers('org_acme'), 2);
    t.equal(await storage.scim.countUsers('org_none'), 0);
    t.same(
      (await storage.scim.usersPage('org_acme', 1, 5)).map((u) => u.identityId),
      ['usr_2'],
      'a page in the order of the whole list',
    );
    t.same(
      (await storage.scim.usersPage('org_acme', 0, 1)).map((u) => u.identityId),
      ['usr_1'],
    );
    t.same(await storage.scim.usersPage('org_acme', 2, 5), []);
    const renamed = { ...user('usr_2', 'org_acme', 'ANN@acme.example'), updatedAt: 3000 };
    t.equal(await storage.scim.updateUser(renamed), false, 'the new name is taken');
    t.equal(
      await storage.scim.updateUser({ ...renamed, userName: 'bo@acme.example', userNameKey: 'bo@acme.example' }),
      true,
    );
    t.equal((await storage.scim.user('org_acme', 'usr_2'))!.userName, 'bo@acme.example');
    // The record goes with its account.
    t.equal(await storage.identities.remove('usr_2'), true);
    t.equal(await storage.scim.user('org_acme', 'usr_2'), null);
  });

  t.test('identity store: a suspension is a flag apart from the operator state', async (t) => {
    const storage = await open();
    await storage.orgs.create(org('acme'), 'id_a');
    await identity(storage, 'usr_1', 'org_acme');
    t.equal(await storage.identities.setSuspended('usr_1', 5000), true);
    t.equal(await storage.identities.setSuspended('usr_1', 6000), false, 'suspended already');
    t.equal(await storage.identities.state('usr_1'), 'suspended');
    t.match(await storage.identities.summaries(['usr_1']), [{ state: 'suspended' }]);
    t.equal(await storage.identities.setState('usr_1', 'disabled', 7000), true);
    t.equal(await storage.identities.state('usr_1'), 'disabled', "the operator's state shows first");
    t.equal(await storage.identities.setSuspended('usr_1', null), true);
    t.equal(await storage.identities.state('usr_1'), 'disabled', 'lifting the suspension lifts nothing else');
    t.equal(await storage.identities.setState('usr_1', 'active', 8000), true);
    t.equal(await storage.identities.state('usr_1'), 'active');
  });

  t.test(
    'scim store: Group externalIds by team, found by index, gone with their team; managed members only',
    async (t) => {
      const storage = await open();
      await storage.orgs.create(org('acme'), 'id_a');
      await storage.orgs.create(org('beta'), 'id_b');
      const team = (teamId: string, orgId: string, slug: string) => ({
        teamId,
        orgId,
        slug,
        displayName: slug,
        createdAt: teamId === 'team_2' ? 2000 : 1000,
        updatedAt: 1000,
      });
      for (const [id, orgId, slug] of [
        ['team_1', 'org_acme', 'eng'],
        ['team_2', 'org_acme', 'ops'],
        ['team_3', 'org_beta', 'eng'],
      ] as const)
        t.equal(await storage.teams.create(team(id, orgId, slug)), true);
      t.match(await storage.teams.byId('org_acme', 'team_1'), { slug: 'eng' });
      t.equal(await storage.teams.byId('org_acme', 'team_3'), null, "another org's team");
      await storage.scim.setGroupExternalId('org_acme', 'team_1', 'ext-1');
      await storage.scim.setGroupExternalId('org_acme', 'team_2', 'ext-1');
      await storage.scim.setGroupExternalId('org_beta', 'team_3', 'ext-1');
      t.same(await storage.scim.groupsByExternalId('org_acme', 'ext-1'), ['team_1', 'team_2']);
      t.same(await storage.scim.groupsByExternalId('org_acme', 'EXT-1'), [], 'case-exact');
      await storage.scim.setGroupExternalId('org_acme', 'team_2', 'ext-2');
      t.equal(await storage.scim.groupExternalId('team_2'), 'ext-2', 'replaced');
      t.same([...(await storage.scim.groupExternalIds('org_acme'))].sort(), [
        ['team_1', 'ext-1'],
        ['team_2', 'ext-2'],
      ]);
      await storage.scim.setGroupExternalId('org_acme', 'team_2', null);
      t.equal(await storage.scim.groupExternalId('team_2'), null, 'cleared');
      t.equal(await storage.teams.remove('team_1'), true);
      t.same(await storage.scim.groupsByExternalId('org_acme', 'ext-1'), [], 'gone with its team');

      await identity(storage, 'usr_m', 'org_acme');
      await identity(storage, 'usr_n', 'org_beta');
      await storage.identities.create({
        identityId: 'usr_p',
        username: 'usr-p',
        displayName: '',
        preferences: {},
        founder: false,
        createdAt: 1000,
        updatedAt: 1000,
      });
      for (const id of ['usr_m', 'usr_p'])
        await storage.orgs.addMember('org_acme', { identityId: id, role: 'member', addedAt: 1000 });
      t.same((await storage.identities.managedAmong('org_acme', ['usr_m', 'usr_n', 'usr_p', 'usr_x'])).sort(), [
        'usr_m',
      ]);
      t.same(await storage.identities.managedAmong('org_acme', []), []);
      const ops = (await storage.teams.byId('org_acme', 'team_2'))!;
      for (const id of ['usr_m', 'usr_p']) await storage.teams.addMember(ops, { identityId: id, addedAt: 1500 });
      t.same(
        (await storage.teams.managedMembers('team_2')).map((m) => m.identityId),
        ['usr_m'],
        'personal members are not shown',
      );
    },
  );

  t.test('link store: an enrolment link is found by its hash and used once, before it expires', async (t) => {
    const storage = await open();
    await storage.orgs.create(org('acme'), 'id_a');
    await identity(storage, 'usr_1', 'org_acme');
    const email = await storage.emails.add({
      emailId: 'eml_1',
      identityId: 'usr_1',
      email: 'ann@acme.example',
      createdAt: 1000,
      verifiedAt: 1000,
    });
    const record = {
      tokenHash: 'h'.repeat(64),
      purpose: 'enrol_passkey' as const,
      identityId: 'usr_1',
      emailId: email.emailId,
      deviceId: null,
      createdAt: 1000,
      expiresAt: 9000,
      usedAt: null,
    };
    await storage.links.insertEnrolment(record);
    t.same(await storage.links.findEnrolment(record.tokenHash), record);
    t.equal(await storage.links.find(record.tokenHash), null, 'not a sign-in link');
    t.equal(await storage.links.consumeEnrolment(record.tokenHash, 9000), false, 'expired');
    t.equal(await storage.links.consumeEnrolment(record.tokenHash, 5000), true);
    t.equal(await storage.links.consumeEnrolment(record.tokenHash, 5001), false, 'once');
    t.equal((await storage.links.findEnrolment(record.tokenHash))!.usedAt, 5000);
    t.equal(await storage.links.purgeExpired(10_000), 1);
    t.equal(await storage.links.findEnrolment(record.tokenHash), null);

    const second = { ...record, tokenHash: 'i'.repeat(64), createdAt: 20_000, expiresAt: 30_000 };
    const used = { ...record, tokenHash: 'j'.repeat(64), createdAt: 20_000, expiresAt: 30_000 };
    await storage.links.insertEnrolment(second);
    await storage.links.insertEnrolment(used);
    t.equal(await storage.links.consumeEnrolment(used.tokenHash, 21_000), true);
    t.equal(await storage.links.hasLiveEnrolment('usr_1', 21_000), true, 'the unused one is live');
    t.equal(await storage.links.hasLiveEnrolment('usr_1', 30_000), false, 'not once it expired');
    t.equal(await storage.links.hasLiveEnrolment('usr_2', 21_000), false, 'another account holds none');
    t.equal(await storage.links.revokeEnrolments('usr_1'), 1, 'only the unused link goes');
    t.equal(await storage.links.findEnrolment(second.tokenHash), null);
    t.equal((await storage.links.findEnrolment(used.tokenHash))!.usedAt, 21_000, 'a used link stays as a record');
    t.equal(await storage.links.hasLiveEnrolment('usr_1', 21_000), false);
  });
}
