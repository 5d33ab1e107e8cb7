import t from 'tap';
import { randomBytes } from 'node:crypto';
import { create } from 'xmlbuilder2';
import { openSharedState } from '#lib/runtime/shared-state/index.js';
import { signRedirectQuery } from '#lib/saml/bindings.js';
import { generateSamlKey } from '#lib/saml/certificate.js';
import { BINDING, NS } from '#lib/saml/constants.js';
import { newSamlId } from '#lib/saml/response.js';
import { build, tempDir, TEST_ISSUER } from '../../helpers/build.js';
import { createTestDatabase, postgresAvailability } from '../../helpers/postgres.js';
import { REDIS_URL, redisAvailability } from '../../helpers/redis.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['saml'] as const;

/**
 * Two control planes on one PostgreSQL and one Redis: the provider registered at one is known to
 * the other, both publish the same IdP certificate (one key ring in storage), and a request ID
 * used at one replica is a replay at the other (the cache is in shared state).
 */
const REQUIRE_ALL = process.env.KEYPLANE_REQUIRE_ALL === '1';
const [postgres, redis] = await Promise.all([postgresAvailability(), redisAvailability()]);
const skip =
  postgres.run && redis.run
    ? false
    : REQUIRE_ALL
      ? false
      : `needs PostgreSQL and Redis: ${!postgres.run ? postgres.reason : ''} ${!redis.run ? redis.reason : ''}`;
const ADMIN = 'saml-replica-admin-0123456789abcdef0123456789';

t.test('SAML across two replicas', { skip }, async (t) => {
  const databaseUrl = await createTestDatabase(t);
  const prefix = `kp-test-saml-${randomBytes(6).toString('hex')}:`;
  const replica = async () => {
    const state = await openSharedState(REDIS_URL, prefix);
    t.teardown(() => state.close());
    return build(t, { areas, state, dataDir: tempDir(t), config: { adminToken: ADMIN, databaseUrl } });
  };
  const a = await replica();
  const b = await replica();
  // Both replicas meet an empty ring at once: the ring lock lets one create it, the other uses it.
  await Promise.all([a.app.inject({ url: '/saml/metadata' }), b.app.inject({ url: '/saml/metadata' })]);
  const ring = await a.services.storage.saml.keys();
  t.equal(ring.filter((k) => k.state === 'current').length, 1, 'one current key after a simultaneous first use');
  t.equal(ring.filter((k) => k.state === 'next').length, 1, 'and one next key');
  const sp = await generateSamlKey({ commonName: 'SP', now: Date.now(), validDays: 2, modulusLength: 2048 });
  const entityId = 'https://sp.example.com/md';
  const acs = 'https://sp.example.com/acs';
  const registered = await a.app.inject({
    method: 'POST',
    url: '/saml/providers',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: { entity_id: entityId, acs_urls: [acs], certificate: sp.certificatePem },
  });
  t.equal(registered.statusCode, 201, registered.statusCode === 201 ? 'registered' : registered.body);

  const [metaA, metaB] = [await a.app.inject({ url: '/saml/metadata' }), await b.app.inject({ url: '/saml/metadata' })];
  const certs = (body: string) => [...body.matchAll(/<ds:X509Certificate>([^<]+)</g)].map((m) => m[1]);
  t.same(certs(metaB.body), certs(metaA.body), 'one key ring in storage: the same certificates at both');

  const root = create().ele(NS.protocol, 'samlp:AuthnRequest', {
    ID: newSamlId(),
    Version: '2.0',
    IssueInstant: new Date().toISOString(),
    Destination: `${TEST_ISSUER}/saml/sso`,
    AssertionConsumerServiceURL: acs,
    ProtocolBinding: BINDING.post,
  });
  root.ele(NS.assertion, 'saml:Issuer').txt(entityId);
  const query = signRedirectQuery('SAMLRequest', root.end({ headless: true }), undefined, sp.privateKeyPem);
  const first = await a.app.inject({ url: `/saml/sso?${query}` });
  t.equal(first.statusCode, 303, 'accepted at the first replica (off to sign in)');
  const replay = await b.app.inject({ url: `/saml/sso?${query}`, headers: { accept: 'application/json' } });
  t.equal(replay.json().reason, 'saml_request_replayed', 'a replay at the other replica is refused');
});
