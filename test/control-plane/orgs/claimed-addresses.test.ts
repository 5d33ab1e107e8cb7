import t, { type Test } from 'tap';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { openServices } from '../../helpers/build.js';
import { rejectionReason } from '../../helpers/reason-of.js';
import { userClaims } from '../../../control-plane/src/oidc/tokens.js';
import { dryRunSignInLink, requestSignInLink } from '../../../control-plane/src/magic/sign-in-link.js';
import { countedEmails } from '../../../control-plane/src/orgs/claimed-addresses.js';
import type { SessionView } from '../../../control-plane/src/context.js';

/**
 * Once an org proves a mail domain, addresses under it on accounts the org does not manage stop
 * counting as verified (docs/orgs.md#claimed-addresses): in claims, and for magic links.
 */
async function setUp(t: Test) {
  const { services, config } = await openServices(t);
  const now = services.now();
  const { storage } = services;
  await storage.orgs.create({ orgId: 'org_acme', slug: 'acme', name: 'Acme', website: null, createdAt: now }, 'usr_o');
  const account = async (identityId: string, email: string, managedBy?: string) => {
    await storage.identities.create({
      identityId,
      username: identityId.slice(4),
      displayName: '',
      preferences: {},
      founder: false,
      ...(managedBy ? { managedBy } : {}),
      createdAt: now,
      updatedAt: now,
    });
    const row = await storage.emails.add({
      emailId: `eml_${identityId}`,
      identityId,
      email,
      createdAt: now,
      verifiedAt: null,
    });
    await storage.emails.markVerified(row.emailId, now);
  };
  const prove = async (domain: string) => {
    await storage.orgs.addMailDomain({
      domainId: `mdm_${domain}`,
      orgId: 'org_acme',
      domain,
      proofToken: 'tok',
      verifiedAt: null,
      checkedAt: null,
      failingSince: null,
      createdAt: now,
    });
    t.equal(await storage.orgs.claimMailDomain(`mdm_${domain}`, now), true);
  };
  const outbox = async () => {
    await services.mailer.idle();
    const dir = join(config.dataDir, 'outbox');
    return existsSync(dir) ? readdirSync(dir).length : 0;
  };
  return { services, account, prove, outbox };
}

t.test(
  "a personal account's address under a proved domain is stated unverified; the managed account's stays verified",
  async (t) => {
    const { services, account, prove } = await setUp(t);
    await account('usr_personal', 'ann@acme.example');
    await account('usr_managed', 'ann.m@acme.example', 'org_acme');
    await account('usr_other', 'bob@other.example');
    t.same((await userClaims(services, 'usr_personal')).email, { address: 'ann@acme.example', verified: true });
    await prove('acme.example');
    t.same((await userClaims(services, 'usr_personal')).email, { address: 'ann@acme.example', verified: false });
    t.same((await userClaims(services, 'usr_managed')).email, { address: 'ann.m@acme.example', verified: true });
    t.same((await userClaims(services, 'usr_other')).email, { address: 'bob@other.example', verified: true });
    // A subdomain is claimed only when proved itself.
    const sub = await countedEmails(services.storage, null, [{ email: 'x@eu.acme.example', verifiedAt: 1 }]);
    t.equal(sub[0]!.verifiedAt, 1);
  },
);

t.test('no magic link goes to an address under another org’s proved domain', async (t) => {
  const { services, account, prove, outbox } = await setUp(t);
  await account('usr_personal', 'ann@acme.example');
  await requestSignInLink(services, 'ann@acme.example', 'dev_1', {});
  t.equal(await outbox(), 1, 'mailed while the domain is unclaimed');
  await prove('acme.example');
  await requestSignInLink(services, 'ann@acme.example', 'dev_1', {});
  t.equal(await outbox(), 1, 'not mailed once the org proved the domain');
  const session: SessionView = {
    id: 'ses_1',
    identityId: 'usr_personal',
    deviceId: 'dev_1',
    assurance: 'passkey',
    amr: ['pop'],
    authTime: services.now(),
  };
  t.equal(await rejectionReason(dryRunSignInLink(services, session, 'ann@acme.example', {})), 'forbidden');
});

t.test('the account page shows an address under another org’s proved domain as claimed by that org', async (t) => {
  const { buildSignedIn } = await import('../../helpers/signed-in.js');
  const { services, signIn } = await buildSignedIn(t, { areas: ['account'] });
  const { browser, identityId } = await signIn({ username: 'ann' });
  const now = services.now();
  const { storage } = services;
  const row = await storage.emails.add({
    emailId: 'eml_ann',
    identityId,
    email: 'ann@acme.example',
    createdAt: now,
    verifiedAt: null,
  });
  await storage.emails.markVerified(row.emailId, now);
  await storage.orgs.create(
    { orgId: 'org_acme', slug: 'acme', name: 'Acme Corp', website: null, createdAt: now },
    'usr_o',
  );
  t.same((await browser.get('/account?format=json')).json().emails, [{ email: 'ann@acme.example', verified: true }]);
  await storage.orgs.addMailDomain({
    domainId: 'mdm_acme',
    orgId: 'org_acme',
    domain: 'acme.example',
    proofToken: 'tok',
    verifiedAt: null,
    checkedAt: null,
    failingSince: null,
    createdAt: now,
  });
  await storage.orgs.claimMailDomain('mdm_acme', now);
  t.same((await browser.get('/account?format=json')).json().emails, [
    { email: 'ann@acme.example', verified: false, claimedBy: 'Acme Corp' },
  ]);
  const page = await browser.get('/account', { accept: 'text/html' });
  t.match(page.body, /claimed by Acme Corp/);
});
