import t from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';

/**
 * The console's org and stream changes (docs/console.md#sections) refuse what the operations
 * refuse: a token revoked already or of another org, another org's connection, an unknown
 * stream, a stream disabled already. The Chromium suite drives the successful changes.
 */
t.test('org and stream changes from the console: each refusal, and nothing changed', async (t) => {
  const { signIn, services } = await buildSignedIn(t);
  const { storage } = services;
  const { browser } = await signIn({ username: 'ada', console: 'operator', assurance: 'sensitive' });
  const now = Date.now();
  for (const [orgId, slug] of [
    ['org_a', 'acme'],
    ['org_b', 'beta'],
  ] as const) {
    await storage.orgs.create({ orgId, slug, name: slug, website: null, createdAt: now }, 'usr_ada');
    await storage.connections.insert({
      connectionId: `con_${slug}`,
      orgId,
      type: 'oidc',
      name: slug,
      settings: { issuer: 'https://idp.example', clientId: 'kp', tokenEndpointAuthMethod: 'client_secret_basic' },
      secretSealed: null,
      domains: [],
      jit: null,
      required: false,
      maxAssurance: 'email',
      sessionMaxHours: 12,
      createdAt: now,
      updatedAt: now,
    });
    await storage.scim.addToken({
      tokenId: `sct_${slug}`,
      orgId,
      secretHash: '0'.repeat(64),
      createdBy: 'usr_ada',
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
    });
  }
  await storage.ssf.insertStream({
    streamId: 'sst_one',
    clientId: 'cl_rx',
    delivery: 'poll',
    endpointUrl: null,
    authorizationSealed: null,
    eventsRequested: [],
    description: null,
    status: 'enabled',
    statusReason: null,
    createdAt: now,
    updatedAt: now,
  });
  const post = async (url: string) => {
    const res = await browser.post(url, {});
    return `${res.statusCode} ${res.json().reason ?? 'ok'}`;
  };

  t.equal(await post('/console/orgs/acme/scim-tokens/sct_beta/revoke'), '404 not_found', "another org's token");
  t.equal(await post('/console/orgs/acme/connections/con_beta/remove'), '404 not_found', "another org's connection");
  t.equal(await post('/console/orgs/nowhere/connections/con_acme/remove'), '404 not_found', 'an unknown org');
  t.equal((await browser.post('/console/orgs/acme/scim-tokens/sct_acme/revoke', {})).statusCode, 200);
  t.equal(await post('/console/orgs/acme/scim-tokens/sct_acme/revoke'), '404 not_found', 'a token revoked already');
  t.ok(await storage.connections.get('con_beta'), "the other org's connection stays");
  t.equal((await storage.scim.tokens('org_b'))[0]?.revokedAt, null, "the other org's token stays live");

  t.equal(await post('/console/streams/sst_none/disable'), '404 not_found', 'an unknown stream');
  t.equal(await post('/console/streams/sst_none/delete'), '404 not_found');
  t.equal((await browser.post('/console/streams/sst_one/disable', {})).statusCode, 200);
  t.match(await storage.ssf.getStream('sst_one'), { status: 'disabled', statusReason: 'disabled by the operator' });
  t.equal(await post('/console/streams/sst_one/disable'), '409 conflict', 'a stream disabled already');
});
