import type { Test } from 'tap';
import type { OrgSite, Storage, StoredOrg } from '../../../control-plane/src/storage/interface.js';

const org = (slug: string, orgId = `org_${slug}`): StoredOrg => ({
  orgId,
  slug,
  name: slug.toUpperCase(),
  website: null,
  createdAt: 1000,
});
const site = (siteId: string, orgId: string, url: string, primary = false, createdAt = 2000): OrgSite => ({
  siteId,
  orgId,
  url,
  label: null,
  primary,
  proofToken: `tok-${siteId}`,
  verifiedAt: null,
  createdAt,
});

/** Behaviour every OrgStore and ScanStore backend must show. */
export function orgStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test('org store: a slug is taken once and the creator is the first owner', async (t) => {
    const { orgs } = await open();
    t.equal(await orgs.create(org('acme'), 'id_a'), true);
    t.equal(await orgs.create(org('acme', 'org_other'), 'id_b'), false);
    t.same(await orgs.getBySlug('acme'), org('acme'));
    t.same(await orgs.get('org_acme'), org('acme'));
    t.equal(await orgs.getBySlug('nope'), null);
    t.equal(await orgs.get('nope'), null);
    t.same(await orgs.members('org_acme'), [{ identityId: 'id_a', role: 'owner', addedAt: 1000 }]);
    t.same(await orgs.listForMember('id_a'), [{ ...org('acme'), role: 'owner' }]);
    t.same(await orgs.listForMember('id_b'), []);
  });

  t.test('org store: every org by slug, a page after a cursor', async (t) => {
    const { orgs } = await open();
    for (const slug of ['cyan', 'acme', 'beta']) await orgs.create(org(slug), 'id_a');
    t.same(await orgs.listPage({ after: null, limit: 2 }), [org('acme'), org('beta')]);
    t.same(await orgs.listPage({ after: 'beta', limit: 2 }), [org('cyan')]);
    t.same(await orgs.listPage({ after: 'cyan', limit: 2 }), []);
  });

  t.test('org store: members join once, change role and leave; owners are counted', async (t) => {
    const { orgs } = await open();
    await orgs.create(org('acme'), 'id_a');
    t.equal(await orgs.addMember('org_acme', { identityId: 'id_b', role: 'member', addedAt: 1100 }), true);
    t.equal(await orgs.addMember('org_acme', { identityId: 'id_b', role: 'admin', addedAt: 1200 }), false);
    t.equal(await orgs.countOwners('org_acme'), 1);
    t.equal(await orgs.setRole('org_acme', 'id_b', 'owner'), true);
    t.equal(await orgs.setRole('org_acme', 'id_x', 'owner'), false);
    t.equal(await orgs.countOwners('org_acme'), 2);
    t.same(await orgs.member('org_acme', 'id_b'), { identityId: 'id_b', role: 'owner', addedAt: 1100 });
    t.equal(await orgs.member('org_acme', 'id_x'), null);
    t.equal(await orgs.removeMember('org_acme', 'id_b'), true);
    t.equal(await orgs.removeMember('org_acme', 'id_b'), false);
  });

  t.test('org store: an invite is replaced by a newer one and taken once', async (t) => {
    const { orgs } = await open();
    await orgs.create(org('acme'), 'id_a');
    await orgs.putInvite({ orgId: 'org_acme', identityId: 'id_b', role: 'member', invitedBy: 'id_a', createdAt: 1 });
    await orgs.putInvite({ orgId: 'org_acme', identityId: 'id_b', role: 'admin', invitedBy: 'id_a', createdAt: 2 });
    t.same(await orgs.invitesFor('id_b'), [
      { orgId: 'org_acme', identityId: 'id_b', role: 'admin', invitedBy: 'id_a', createdAt: 2 },
    ]);
    t.same(
      (await orgs.invitesOf('org_acme')).map((i) => [i.identityId, i.role]),
      [['id_b', 'admin']],
      "the org's open invites",
    );
    t.match(await orgs.takeInvite('org_acme', 'id_b'), { role: 'admin' });
    t.same(await orgs.invitesOf('org_acme'), [], 'an accepted invite is no longer open');
    t.equal(await orgs.takeInvite('org_acme', 'id_b'), null);
    t.same(await orgs.invitesFor('id_b'), []);
  });

  t.test('org store: sites in order, one primary, found by origin, verified, removed', async (t) => {
    const { orgs } = await open();
    await orgs.create(org('acme'), 'id_a');
    await orgs.create(org('beta'), 'id_b');
    await orgs.addSite(site('s1', 'org_acme', 'https://shop.example/', true, 2000));
    await orgs.addSite(site('s2', 'org_acme', 'https://blog.example/news', false, 2001));
    await orgs.addSite(site('s3', 'org_beta', 'https://shop.example/other', true, 2002));
    t.same(
      (await orgs.sites('org_acme')).map((s) => [s.siteId, s.primary]),
      [
        ['s1', true],
        ['s2', false],
      ],
    );
    t.equal(await orgs.setPrimary('org_acme', 's3'), false, "another org's site");
    t.equal(await orgs.setPrimary('org_acme', 's2'), true);
    t.same(
      (await orgs.sites('org_acme')).map((s) => [s.siteId, s.primary]),
      [
        ['s1', false],
        ['s2', true],
      ],
    );
    t.same(
      (await orgs.primarySites()).map((s) => s.siteId),
      ['s2', 's3'],
    );
    t.same(
      (await orgs.sitesByOrigin('https://shop.example')).map((s) => s.siteId),
      ['s1', 's3'],
    );
    await orgs.markSiteVerified('s1', 5000);
    t.equal((await orgs.site('s1'))!.verifiedAt, 5000);
    t.equal(await orgs.site('nope'), null);
    t.equal(await orgs.removeSite('org_beta', 's1'), false);
    t.equal(await orgs.removeSite('org_acme', 's1'), true);
    t.same(
      (await orgs.sites('org_acme')).map((s) => s.siteId),
      ['s2'],
    );
  });

  t.test('scan store: history per site newest first, public scans by URL', async (t) => {
    const { scans } = await open();
    const scan = (scanId: string, siteId: string | null, url: string, scannedAt: number) => ({
      scanId,
      siteId,
      url,
      grade: 'B',
      score: 70,
      rating: '{}',
      scannedAt,
    });
    await scans.record(scan('a', 's1', 'https://shop.example/', 1));
    await scans.record(scan('b', 's1', 'https://shop.example/', 3));
    await scans.record(scan('c', null, 'https://shop.example/', 5));
    await scans.record(scan('d', null, 'https://shop.example/', 4));
    t.equal((await scans.latestForSite('s1'))!.scanId, 'b');
    t.same(
      (await scans.historyForSite('s1', 10)).map((s) => s.scanId),
      ['b', 'a'],
    );
    t.same(
      (await scans.historyForSite('s1', 1)).map((s) => s.scanId),
      ['b'],
    );
    t.equal(await scans.latestForSite('s9'), null);
    t.same(await scans.latestPublic('https://shop.example/'), scan('c', null, 'https://shop.example/', 5));
    t.equal(await scans.latestPublic('https://other.example/'), null);
  });
}

/** Behaviour every backend shows for proved mail domains and managed accounts (docs/orgs.md#mail-domains). */
export function mailDomainConformance(t: Test, open: () => Promise<Storage>): void {
  const entry = (domainId: string, orgId: string, domain: string) => ({
    domainId,
    orgId,
    domain,
    proofToken: `tok-${domainId}`,
    verifiedAt: null,
    checkedAt: null,
    failingSince: null,
    createdAt: 1000,
  });

  t.test('mail domains: pending for many orgs, claimed by one, re-checked, lapsed and removed', async (t) => {
    const { orgs } = await open();
    await orgs.create(org('acme'), 'id_a');
    await orgs.create(org('rival'), 'id_b');
    t.equal(await orgs.addMailDomain(entry('mdm_1', 'org_acme', 'acme.example')), true);
    t.equal(await orgs.addMailDomain(entry('mdm_x', 'org_acme', 'acme.example')), false, 'one entry per org and name');
    t.equal(await orgs.addMailDomain(entry('mdm_2', 'org_rival', 'acme.example')), true, 'pending proofs may compete');
    t.same(await orgs.mailDomain('org_acme', 'acme.example'), entry('mdm_1', 'org_acme', 'acme.example'));
    t.equal(await orgs.mailDomainHolder('acme.example'), null);
    t.equal(await orgs.claimMailDomain('mdm_1', 2000), true);
    t.equal(await orgs.claimMailDomain('mdm_2', 2001), false, 'the first org to prove it holds it');
    t.match(await orgs.mailDomainHolder('acme.example'), { domainId: 'mdm_1', verifiedAt: 2000, checkedAt: 2000 });
    t.same(await orgs.mailDomainHolders(['acme.example', 'other.example']), [
      { domain: 'acme.example', orgId: 'org_acme' },
    ]);
    t.same(await orgs.mailDomainHolders([]), []);
    t.same(
      (await orgs.mailDomainsDue(2500)).map((d) => d.domainId),
      ['mdm_1'],
      'only proved domains are re-checked',
    );
    await orgs.recordMailDomainCheck('mdm_1', 3000, 3000, false);
    t.same(await orgs.mailDomainsDue(2500), [], 'checked since');
    t.match(await orgs.mailDomain('org_acme', 'acme.example'), { verifiedAt: 2000, failingSince: 3000 });
    await orgs.recordMailDomainCheck('mdm_1', 4000, 3000, true);
    t.match(await orgs.mailDomain('org_acme', 'acme.example'), { verifiedAt: null, checkedAt: 4000 });
    t.equal(await orgs.claimMailDomain('mdm_2', 5000), true, 'a lapsed domain may be proved by another org');
    t.equal(await orgs.removeMailDomain('org_acme', 'mdm_2'), false, "not the org's entry");
    t.equal(await orgs.removeMailDomain('org_rival', 'mdm_2'), true);
    t.same(
      (await orgs.mailDomains('org_acme')).map((d) => d.domain),
      ['acme.example'],
    );
  });

  t.test('identities: a managed account names its org; a personal one has no managedBy', async (t) => {
    const { orgs, identities } = await open();
    await orgs.create(org('acme'), 'id_a');
    const person = (identityId: string, managedBy?: string) => ({
      identityId,
      username: identityId.replace('_', ''),
      displayName: '',
      preferences: {},
      founder: false,
      ...(managedBy ? { managedBy } : {}),
      createdAt: 1000,
      updatedAt: 1000,
    });
    t.equal(await identities.create(person('usr_m', 'org_acme')), true);
    t.equal(await identities.create(person('usr_p')), true);
    t.match(await identities.get('usr_m'), { ...person('usr_m', 'org_acme'), managedBy: 'org_acme' });
    const personal = await identities.get('usr_p');
    t.match(personal, person('usr_p'));
    t.notOk(personal?.managedBy, 'a personal account has no managedBy');
    t.same(
      (await identities.listManaged('org_acme')).map((i) => i.identityId),
      ['usr_m'],
    );
  });

  t.test('passkey policy: none until set, then replaced whole; passkeys keep whether they were attested', async (t) => {
    const { orgs, identities, credentials } = await open();
    await orgs.create(org('acme'), 'id_a');
    t.equal(await orgs.passkeyPolicy('org_acme'), null);
    const policy = {
      orgId: 'org_acme',
      aaguidsAllowed: ['2fc0579f-8113-47ea-b116-bb5a8db9202a'],
      aaguidsDenied: [],
      attestation: 'required' as const,
      effectiveAt: 1000,
      graceUntil: 1000 + 14 * 86_400_000,
      updatedBy: 'id_a',
    };
    await orgs.putPasskeyPolicy(policy);
    t.same(await orgs.passkeyPolicy('org_acme'), policy);
    const next = {
      ...policy,
      aaguidsAllowed: [],
      aaguidsDenied: ['ee882879-721c-4913-9775-3dfcce97072a'],
      attestation: 'none' as const,
      effectiveAt: 2000,
      graceUntil: 2000,
    };
    await orgs.putPasskeyPolicy(next);
    t.same(await orgs.passkeyPolicy('org_acme'), next);

    await identities.create({
      identityId: 'usr_m',
      username: 'm1',
      displayName: '',
      preferences: {},
      founder: false,
      managedBy: 'org_acme',
      createdAt: 1,
      updatedAt: 1,
    });
    const passkey = (credId: string, attested?: boolean) => ({
      credId,
      identityId: 'usr_m',
      publicKey: new Uint8Array([1, 2, 3]),
      counter: 0,
      transports: [],
      backupEligible: false,
      backedUp: false,
      label: credId,
      createdAt: 1,
      lastUsedAt: null,
      aaguid: '2fc0579f-8113-47ea-b116-bb5a8db9202a',
      ...(attested === undefined ? {} : { attested }),
    });
    t.equal(await credentials.insert(passkey('c1', true)), true);
    t.equal(await credentials.insert(passkey('c2')), true);
    t.match(await credentials.get('c1'), { attested: true });
    t.same(
      (await credentials.listByIdentity('usr_m')).map((c) => c.attested),
      [true, false],
    );
  });
}
