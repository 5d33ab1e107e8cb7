import type { Test } from 'tap';
import type { Storage, StoredOrg, StoredTeam } from '../../../control-plane/src/storage/interface.js';

const org = (slug: string): StoredOrg => ({ orgId: `org_${slug}`, slug, name: slug, website: null, createdAt: 1000 });
const team = (orgSlug: string, slug: string, displayName = slug.toUpperCase()): StoredTeam => ({
  teamId: `team_${orgSlug}_${slug}`,
  orgId: `org_${orgSlug}`,
  slug,
  displayName,
  createdAt: 2000,
  updatedAt: 2000,
});

/** Behaviour every TeamStore backend must show. */
export function teamStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test('team store: a slug is taken once per org, renamed and removed', async (t) => {
    const { orgs, teams } = await open();
    await orgs.create(org('acme'), 'id_a');
    await orgs.create(org('beta'), 'id_b');
    t.equal(await teams.create(team('acme', 'eng', 'Engineering (EMEA)')), true);
    t.equal(await teams.create({ ...team('acme', 'eng'), teamId: 'team_other' }), false);
    t.equal(await teams.create(team('beta', 'eng')), true, 'another org may use the same slug');
    t.same(await teams.get('org_acme', 'eng'), team('acme', 'eng', 'Engineering (EMEA)'));
    t.equal(await teams.get('org_acme', 'ops'), null);
    t.equal(await teams.rename('team_acme_eng', 'Engineering', 3000), true);
    t.same(await teams.get('org_acme', 'eng'), { ...team('acme', 'eng', 'Engineering'), updatedAt: 3000 });
    await teams.create(team('acme', 'design'));
    t.same(
      (await teams.list('org_acme')).map((x) => x.slug),
      ['design', 'eng'],
    );
    t.equal(await teams.remove('team_acme_design'), true);
    t.equal(await teams.remove('team_acme_design'), false);
    t.same(
      (await teams.list('org_acme')).map((x) => x.slug),
      ['eng'],
    );
  });

  t.test(
    'team store: only org members join, once; leaving the org or the team ending takes the membership',
    async (t) => {
      const { orgs, teams } = await open();
      await orgs.create(org('acme'), 'id_a');
      await orgs.create(org('beta'), 'id_b');
      await orgs.addMember('org_acme', { identityId: 'id_c', role: 'member', addedAt: 1100 });
      const eng = team('acme', 'eng');
      const ops = team('acme', 'ops');
      const beta = team('beta', 'core');
      for (const x of [eng, ops, beta]) await teams.create(x);
      t.equal(await teams.addMember(eng, { identityId: 'id_c', addedAt: 2100 }), true);
      t.equal(await teams.addMember(eng, { identityId: 'id_c', addedAt: 2200 }), false, 'once');
      t.equal(await teams.addMember(eng, { identityId: 'id_b', addedAt: 2100 }), false, 'not a member of acme');
      t.equal(await teams.addMember(ops, { identityId: 'id_c', addedAt: 2300 }), true);
      t.equal(await teams.addMember(eng, { identityId: 'id_a', addedAt: 2400 }), true);
      await teams.addMember(beta, { identityId: 'id_b', addedAt: 2500 });
      t.same(await teams.members(eng.teamId), [
        { identityId: 'id_c', addedAt: 2100 },
        { identityId: 'id_a', addedAt: 2400 },
      ]);
      t.same(await teams.teamsOf('id_c'), [
        { orgSlug: 'acme', teamSlug: 'eng' },
        { orgSlug: 'acme', teamSlug: 'ops' },
      ]);
      t.same(await teams.membershipsIn('org_acme'), [
        { teamSlug: 'eng', identityId: 'id_a' },
        { teamSlug: 'eng', identityId: 'id_c' },
        { teamSlug: 'ops', identityId: 'id_c' },
      ]);
      t.equal(await teams.removeMember(ops.teamId, 'id_c'), true);
      t.equal(await teams.removeMember(ops.teamId, 'id_c'), false);
      await orgs.removeMember('org_acme', 'id_c');
      t.same(await teams.teamsOf('id_c'), [], 'leaving the org leaves its teams');
      await teams.remove(eng.teamId);
      t.same(await teams.teamsOf('id_a'), []);
      t.same(await teams.teamsOf('id_b'), [{ orgSlug: 'beta', teamSlug: 'core' }]);
    },
  );
}
