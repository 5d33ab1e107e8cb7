import t from 'tap';
import { readFileSync } from 'node:fs';
import { computeRolloutStatus } from '#lib/profiles/rollout-status.js';
import { applyProfileToPolicy, checkMetadataAgainstProfile } from '#lib/profiles/constraints.js';
import { validateDocument, DocumentError } from '#lib/profiles/documents.js';

const now = 1_000_000;
const declared = (mode: 'observe' | 'canary' | 'enforce') => ({ hash: 'a', mode });
const fresh = { expiresAt: now + 1, config: { version: 1, hash: 'a' } };

t.test(
  'enforced only with a declared enforce config and fresh matching evidence; never green by default',
  async (t) => {
    t.same(computeRolloutStatus({ registered: false, declared: null, observed: [], now }), {
      status: 'unverified',
      reason: 'not_registered',
    });
    t.same(computeRolloutStatus({ registered: true, declared: null, observed: [fresh], now }), {
      status: 'unverified',
      reason: 'no_gateway',
    });
    t.same(computeRolloutStatus({ registered: true, declared: declared('enforce'), observed: [], now }), {
      status: 'unverified',
      reason: 'no_evidence',
    });
    t.same(
      computeRolloutStatus({
        registered: true,
        declared: declared('enforce'),
        observed: [{ ...fresh, expiresAt: now }],
        now,
      }),
      { status: 'stale', reason: 'evidence_expired' },
    );
    t.same(
      computeRolloutStatus({
        registered: true,
        declared: declared('enforce'),
        observed: [{ ...fresh, config: { version: 2, hash: 'b' } }],
        now,
      }),
      { status: 'mismatch', reason: 'config_mismatch' },
    );
    t.same(
      computeRolloutStatus({
        registered: true,
        declared: declared('enforce'),
        observed: [fresh, { ...fresh, config: null }],
        now,
      }),
      { status: 'mismatch', reason: 'failing_closed' },
    );
    t.same(computeRolloutStatus({ registered: true, declared: declared('observe'), observed: [fresh], now }), {
      status: 'unverified',
      reason: 'observing',
    });
    t.same(computeRolloutStatus({ registered: true, declared: declared('canary'), observed: [fresh], now }), {
      status: 'unverified',
      reason: 'canary',
    });
    t.same(computeRolloutStatus({ registered: true, declared: declared('enforce'), observed: [fresh], now }), {
      status: 'enforced',
      reason: 'enforcing_declared_config',
    });
  },
);

const profile = validateDocument('profile', {
  contract: 'project-trust-profile/v1',
  project: 'shop',
  exposure: 'private',
  principals: { humans: true, agents: false },
  environments: [{ name: 'prod', redirect_uris: ['https://shop.example/cb'], resources: ['https://shop.example/api'] }],
  data_class: 'internal',
  required_assurance: 'passkey',
});

t.test(
  'the profile raises every protected route to its floor and admitted principals, and adds a floor for unmatched paths',
  async (t) => {
    const policy = applyProfileToPolicy(
      {
        mode: 'enforce',
        routes: [
          { path: '/pub', public: true },
          { path: '/a', min_assurance: 'sensitive' },
          { path: '/b', min_assurance: 'email', principals: ['agent', 'human'] },
        ],
      },
      profile,
    );
    t.same(policy.routes, [
      { path: '/pub', public: true },
      { path: '/a', min_assurance: 'sensitive', principals: ['human'] },
      { path: '/b', min_assurance: 'passkey', principals: ['human'] },
      { path: '/', min_assurance: 'passkey', principals: ['human'] },
    ]);
    t.same(
      checkMetadataAgainstProfile(
        { redirect_uris: ['https://shop.example/cb'], resources: [], access: { humans: true, agents: false } },
        profile,
      ),
      [],
    );
    t.same(
      checkMetadataAgainstProfile(
        {
          redirect_uris: ['https://x.example/cb'],
          resources: ['https://x.example/api'],
          access: { humans: true, agents: true },
        },
        profile,
      ).map((v) => v.field),
      ['redirect_uris', 'resources', 'access'],
    );
  },
);

t.test('schema rules a JSON schema cannot say are checked too', async (t) => {
  t.throws(
    () => validateDocument('profile', { ...profile, principals: { humans: false, agents: false } }),
    DocumentError,
  );
  t.throws(
    () => validateDocument('profile', { ...profile, environments: [profile.environments[0], profile.environments[0]] }),
    /repeats prod/,
  );
});

t.test('an environment names 0..20 resources, as docs/rollout.md says, and may leave them out', async (t) => {
  const withResources = (resources?: string[]) =>
    validateDocument('profile', {
      ...profile,
      environments: [{ name: 'prod', redirect_uris: ['https://shop.example/cb'], ...(resources ? { resources } : {}) }],
    });
  t.same(withResources().environments[0]!.resources, [], 'left out: none');
  t.same(withResources([]).environments[0]!.resources, []);
  const twenty = Array.from({ length: 20 }, (_, i) => `https://shop.example/api/${i}`);
  t.equal(withResources(twenty).environments[0]!.resources.length, 20);
  t.throws(() => withResources([...twenty, 'https://shop.example/api/20']), /environments\.0\.resources/);
  // The guide's annotation is the rule the schema keeps.
  t.match(readFileSync('docs/rollout.md', 'utf8'), /resources: \[[^\]]*\]\s+# 0\.\.20/);
});
