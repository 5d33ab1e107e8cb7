import t, { type Test as Tap } from 'tap';
import { decodeJwt } from 'jose';
import type { FastifyInstance } from 'fastify';
import type { AccessDirectory } from '#lib/access/directory.js';
import type { ControlPlaneServices } from '../../../control-plane/src/context.js';
import { getConfig, registerGateway, setup, updatePolicy, type GatewayClient } from './setup.js';

const AT = 1_000;

const POLICY = {
  mode: 'enforce',
  routes: [
    { path: '/', allow: { orgs: [{ slug: 'acme' }], users: ['late-comer'] } },
    { path: '/open', public: true },
  ],
};

function account(identityId: string, username: string) {
  return { identityId, username, displayName: '', preferences: {}, founder: false, createdAt: AT, updatedAt: AT };
}

/** How many member directories the control plane has built from storage so far. */
async function builds(services: ControlPlaneServices): Promise<number> {
  const metric = services.metrics.getSingleMetric('kp_gateway_directory_builds_total');
  return (await metric!.get()).values[0]?.value ?? 0;
}

/** The directory in the config a polling gateway gets now. */
async function poll(app: FastifyInstance, client: GatewayClient): Promise<AccessDirectory> {
  const res = await getConfig(app, client);
  if (res.statusCode !== 200) throw new Error(`config: ${res.body}`);
  return decodeJwt(res.body).access_directory as AccessDirectory;
}

/** A control plane with org `acme` (owner `usr_owner`, member `usr_member`) and a gateway client whose rules name it. */
async function acme(t: Tap) {
  const built = await setup(t);
  const { storage } = built.services;
  await storage.identities.create(account('usr_owner', 'owner'));
  await storage.identities.create(account('usr_member', 'member'));
  await storage.orgs.create(
    { orgId: 'org_acme', slug: 'acme', name: 'Acme', website: null, createdAt: AT },
    'usr_owner',
  );
  await storage.orgs.addMember('org_acme', { identityId: 'usr_member', role: 'member', addedAt: AT });
  const client = await registerGateway(built.app, { gateway: POLICY });
  const first = await poll(built.app, client);
  t.match(first.identities['usr_member'], { username: 'member', orgs: [{ slug: 'acme', role: 'member' }] });
  return { ...built, storage, client, built: await builds(built.services) };
}

t.test('a poll with nothing changed reuses the directory instead of reading the members again', async (t) => {
  const { app, services, client, built } = await acme(t);
  t.equal(built, 1, 'the first poll built it');
  const before = await poll(app, client);
  await poll(app, client);
  t.equal(await builds(services), 1, 'two more polls built nothing');
  t.same(await poll(app, client), before, 'and serve the same directory');
  await services.storage.identities.setDisplayName('usr_member', 'Member M.', AT);
  await poll(app, client);
  t.equal(await builds(services), 1, 'a display name is not in the directory: nothing to rebuild');
});

t.test('a member added is in the next config', async (t) => {
  const { app, services, storage, client, built } = await acme(t);
  await storage.identities.create(account('usr_new', 'newcomer'));
  await storage.orgs.addMember('org_acme', { identityId: 'usr_new', role: 'member', addedAt: AT });
  const directory = await poll(app, client);
  t.equal(await builds(services), built + 1);
  t.match(directory.identities['usr_new'], { username: 'newcomer', orgs: [{ slug: 'acme', role: 'member' }] });
});

t.test('a member removed is gone from the next config', async (t) => {
  const { app, services, storage, client, built } = await acme(t);
  await storage.orgs.removeMember('org_acme', 'usr_member');
  const directory = await poll(app, client);
  t.equal(await builds(services), built + 1);
  t.notOk(directory.identities['usr_member'], 'no longer listed');
});

t.test('a role changed shows in the next config', async (t) => {
  const { app, services, storage, client, built } = await acme(t);
  await storage.orgs.setRole('org_acme', 'usr_member', 'admin');
  const directory = await poll(app, client);
  t.equal(await builds(services), built + 1);
  t.same(directory.identities['usr_member']?.orgs, [{ slug: 'acme', role: 'admin' }]);
});

t.test('an account disabled is marked disabled in the next config, and enabled again unmarked', async (t) => {
  const { app, services, storage, client, built } = await acme(t);
  await storage.identities.setState('usr_member', 'disabled', AT);
  t.equal((await poll(app, client)).identities['usr_member']?.disabled, true);
  t.equal(await builds(services), built + 1);
  await storage.identities.setState('usr_member', 'active', AT);
  t.notOk((await poll(app, client)).identities['usr_member']?.disabled);
  t.equal(await builds(services), built + 2);
});

t.test('an account deleted is gone from the next config', async (t) => {
  const { app, services, storage, client, built } = await acme(t);
  await storage.identities.remove('usr_member');
  const directory = await poll(app, client);
  t.equal(await builds(services), built + 1);
  t.notOk(directory.identities['usr_member']);
});

t.test('a username changed shows in the next config', async (t) => {
  const { app, services, storage, client, built } = await acme(t);
  await storage.identities.rename('usr_member', 'renamed', AT);
  const directory = await poll(app, client);
  t.equal(await builds(services), built + 1);
  t.equal(directory.identities['usr_member']?.username, 'renamed');
});

t.test('an account created under a username the rules name is in the next config', async (t) => {
  const { app, services, storage, client, built } = await acme(t);
  await storage.identities.create(account('usr_late', 'late-comer'));
  const directory = await poll(app, client);
  t.equal(await builds(services), built + 1);
  t.match(directory.identities['usr_late'], { username: 'late-comer' });
});

t.test("the client's rules changed rebuild its directory", async (t) => {
  const { app, services, client, built } = await acme(t);
  await updatePolicy(app, client, {
    mode: 'enforce',
    routes: [{ path: '/', allow: { users: ['owner'] } }],
  });
  const directory = await poll(app, client);
  t.equal(await builds(services), built + 1);
  t.same(Object.keys(directory.identities), ['usr_owner'], 'only whom the new rules name');
});

t.test('each client keeps its own directory: one client polling does not make another rebuild', async (t) => {
  const { app, services, client, built } = await acme(t);
  const other = await registerGateway(app, {
    gateway: { mode: 'enforce', routes: [{ path: '/', allow: { users: ['owner'] } }] },
  });
  await poll(app, other);
  t.equal(await builds(services), built + 1, 'the other client built its own');
  await poll(app, client);
  await poll(app, other);
  t.equal(await builds(services), built + 1, 'and neither rebuilds while nothing changes');
});
