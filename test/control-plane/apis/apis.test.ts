import t from 'tap';
import { ADMIN, registerClient } from '../../helpers/oidc.js';
import { build } from '../../helpers/build.js';
import { apiAccessFor, declareApi, updateApi, type ApiActor } from '../../../control-plane/src/apis/apis.js';
import { createOrg, loadMembership } from '../../../control-plane/src/orgs/membership.js';
import { addSite } from '../../../control-plane/src/orgs/sites.js';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';

/**
 * Who declares APIs and who may ask for their scopes (docs/apis.md), through the operations and
 * the admin API: an org's domains and another owner's gateway, roles, revisions, gateway routes
 * declaring their resource's scopes, and discovery listing every declared scope.
 */
const reasonOf = async (call: Promise<unknown>) =>
  call.then(
    () => 'accepted',
    (error: unknown) => (isKeyplaneError(error) ? error.reason : String(error)),
  );
const scopes = [{ name: 'notes.read', description: 'Read your notes' }];

t.test('APIs: org domains, roles, gateways, revisions, admission and discovery', async (t) => {
  const { app, services } = await build(t, { config: { adminToken: ADMIN } });
  const now = services.now();
  for (const username of ['owner', 'member', 'stranger'])
    await services.storage.identities.create({
      identityId: `usr_${username}`,
      username,
      displayName: '',
      preferences: {},
      founder: false,
      createdAt: now,
      updatedAt: now,
    });
  const { org } = await createOrg(services, 'usr_owner', { name: 'Acme' });
  await services.storage.orgs.addMember(org.orgId, { identityId: 'usr_member', role: 'member', addedAt: now });
  const { site } = await addSite(services, await loadMembership(services, org.slug, 'usr_owner'), 'usr_owner', {
    url: 'https://acme.example',
  });
  const asOrg = (identityId: string): ApiActor => ({ kind: 'org', slug: org.slug, identityId });
  const declare = (actor: ApiActor, resource: string) =>
    declareApi(services, actor, { resource, name: 'Notes', scopes });

  t.equal(await reasonOf(declare(asOrg('usr_owner'), 'https://api.acme.example')), 'invalid_target', 'unproved domain');
  await services.storage.orgs.markSiteVerified(site.siteId, now);
  // The operator's gateway at a host under the org's domain stays the operator's.
  await registerClient(app, {
    client_name: 'Gateway',
    redirect_uris: ['https://gw.acme.example/_gate/callback'],
    gateway: {
      mode: 'enforce',
      routes: [
        { path: '/notes', scopes: ['notes.list'] },
        { path: '/mcp', mcp: true, scopes: ['tools.use'] },
      ],
    },
  });
  t.equal(
    await reasonOf(declare(asOrg('usr_owner'), 'https://gw.acme.example')),
    'invalid_target',
    "another's gateway",
  );
  t.equal(await reasonOf(declare(asOrg('usr_member'), 'https://api.acme.example')), 'forbidden', 'a member');
  t.equal(await reasonOf(declare(asOrg('usr_stranger'), 'https://api.acme.example')), 'not_found', 'not a member');
  t.equal(await reasonOf(declare(asOrg('usr_owner'), 'https://acme.example.evil.test')), 'invalid_target');
  const { api } = await declare(asOrg('usr_owner'), 'https://api.acme.example');
  t.equal(api.orgId, org.orgId);

  t.equal(
    await reasonOf(
      updateApi(services, asOrg('usr_owner'), api.apiId, { resource: 'https://b.acme.example', name: 'x', scopes }),
    ),
    'invalid_request',
    'the resource never changes',
  );
  t.equal(
    await reasonOf(
      updateApi(services, asOrg('usr_owner'), api.apiId, { resource: api.resource, name: 'x', scopes, revision: 7 }),
    ),
    'stale_revision',
  );
  t.equal(await reasonOf(updateApi(services, { kind: 'operator' }, 'api_nope', {})), 'not_found');

  const orgClient = { clientId: 'cl_org', ownerId: org.orgId };
  const operatorClient = { clientId: 'cl_op', ownerId: null };
  const personal = { clientId: 'cl_me', ownerId: 'usr_stranger' };
  t.match(await apiAccessFor(services, orgClient, api.resource), {
    scopes: [{ name: 'notes.read', orgId: org.orgId }],
  });
  t.equal(await apiAccessFor(services, operatorClient, api.resource), null, "an org's API admits the org's clients");
  t.equal(await apiAccessFor(services, personal, api.resource), null);
  await updateApi(services, asOrg('usr_owner'), api.apiId, {
    resource: api.resource,
    name: 'Notes',
    scopes,
    allowed_clients: ['cl_me'],
  });
  t.ok(await apiAccessFor(services, personal, api.resource), 'a listed client');

  // Gateway routes declare their resource's scopes: for the gateway's owner's clients, any client on an MCP route.
  t.match(await apiAccessFor(services, operatorClient, 'https://gw.acme.example'), {
    scopes: [{ name: 'notes.list', description: null }],
  });
  t.equal(await apiAccessFor(services, personal, 'https://gw.acme.example'), null);
  t.match(await apiAccessFor(services, personal, 'https://gw.acme.example/mcp'), { scopes: [{ name: 'tools.use' }] });

  const discovery = (await app.inject({ url: '/.well-known/openid-configuration' })).json();
  t.same(discovery.scopes_supported.slice(0, 6), ['openid', 'email', 'profile', 'orgs', 'groups', 'offline_access']);
  for (const name of ['notes.read', 'notes.list', 'tools.use']) t.ok(discovery.scopes_supported.includes(name), name);
  const rfc8414 = (await app.inject({ url: '/.well-known/oauth-authorization-server' })).json();
  t.same(rfc8414.scopes_supported, discovery.scopes_supported);

  const unauthenticated = await app.inject({ method: 'GET', url: '/admin/apis' });
  t.match(
    { status: unauthenticated.statusCode, body: unauthenticated.json() },
    { status: 401, body: { reason: 'unauthorized' } },
  );
  const listed = await app.inject({ method: 'GET', url: '/admin/apis', headers: { authorization: `Bearer ${ADMIN}` } });
  t.match(listed.json(), { ok: true, apis: [{ apiId: api.apiId, org: org.orgId, scopes }] });
  const bad = await app.inject({
    method: 'POST',
    url: '/admin/apis',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: { resource: 'https://x.example', name: 'X', scopes: [{ name: 'groups', description: 'x' }] },
  });
  t.match({ status: bad.statusCode, body: bad.json() }, { status: 400, body: { ok: false, reason: 'invalid_scope' } });
});
