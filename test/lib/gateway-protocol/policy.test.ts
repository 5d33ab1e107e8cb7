import t from 'tap';
import {
  canaryBucket,
  evaluatePolicy,
  findRoute,
  type Caller,
  type GatewayPolicy,
} from '#lib/gateway-protocol/policy.js';
import { parseGatewayPolicy } from '#lib/gateway-protocol/parse-policy.js';

/** What a gateway finds wrong in a signed policy (docs/gateway.md#policy). */
const checkGatewayPolicy = (value: unknown) => parseGatewayPolicy(value, { at: 'enforcement' }).problems;

const routes = [
  { path: '/', min_assurance: 'email' as const },
  { path: '/api', dpop: 'allowed' as const, scopes: ['read'] },
  { path: '/api/admin', min_assurance: 'sensitive' as const, principals: ['human' as const] },
  { path: '/agents', principals: ['agent' as const], dpop: 'required' as const },
  { path: '/public', public: true },
];
const enforce: GatewayPolicy = { mode: 'enforce', routes };

function caller(overrides: Partial<Caller> = {}): Caller {
  return {
    kind: 'session',
    subject: 'u1',
    principalType: 'human',
    assurance: 'passkey',
    scopes: ['read'],
    bucketId: 'sid-1',
    ...overrides,
  };
}

t.test('the longest segment prefix wins', async (t) => {
  t.equal(findRoute(routes, '/api/admin/users')?.path, '/api/admin');
  t.equal(findRoute(routes, '/api/x')?.path, '/api');
  t.equal(findRoute(routes, '/apix')?.path, '/', '/api does not match /apix');
  t.equal(findRoute(routes, '/api/adminx')?.path, '/api');
  t.equal(findRoute(routes, '//api//admin')?.path, '/api/admin', 'empty segments do not dodge a rule');
  t.equal(findRoute(routes, '/api?x=/public')?.path, '/api', 'the query never matches');
  t.equal(findRoute([{ path: '/x' }], '/y'), null);
});

t.test('public routes allow anyone; others need a caller', async (t) => {
  t.equal(evaluatePolicy(enforce, '/public/logo.png', null).outcome, 'allow');
  const anonymous = evaluatePolicy(enforce, '/home', null);
  t.equal(anonymous.outcome, 'refuse');
  t.equal(anonymous.outcome === 'refuse' && anonymous.reason, 'unauthorized');
  t.equal(
    evaluatePolicy({ mode: 'enforce', routes: [] }, '/anything', null).outcome,
    'refuse',
    'an unmatched path is protected',
  );
  t.equal(evaluatePolicy({ mode: 'enforce', routes: [] }, '/anything', caller()).outcome, 'allow');
});

t.test('min_assurance asks for step-up with the level needed', async (t) => {
  const decision = evaluatePolicy(enforce, '/api/admin', caller());
  t.match(decision, { outcome: 'refuse', reason: 'insufficient_user_authentication', requiredAssurance: 'sensitive' });
  t.equal(evaluatePolicy(enforce, '/api/admin', caller({ assurance: 'sensitive' })).outcome, 'allow');
  t.match(evaluatePolicy(enforce, '/home', caller({ assurance: 'recovery' })), {
    outcome: 'refuse',
    reason: 'insufficient_user_authentication',
    requiredAssurance: 'email',
  });
  t.equal(evaluatePolicy(enforce, '/home', caller({ assurance: 'email' })).outcome, 'allow');
});

t.test('principals, scopes and dpop', async (t) => {
  t.match(evaluatePolicy(enforce, '/api/admin', caller({ principalType: 'agent', assurance: 'sensitive' })), {
    reason: 'principal_not_allowed',
  });
  t.match(evaluatePolicy(enforce, '/api/x', caller({ scopes: [] })), {
    reason: 'insufficient_scope',
    missingScopes: ['read'],
  });
  t.match(evaluatePolicy(enforce, '/agents', caller({ principalType: 'agent', kind: 'bearer' })), {
    reason: 'dpop_required',
  });
  t.equal(evaluatePolicy(enforce, '/agents', caller({ principalType: 'agent', kind: 'dpop' })).outcome, 'allow');
});

t.test('allow rules decide who passes, after assurance: access_denied with the refusal', async (t) => {
  const policy: GatewayPolicy = {
    mode: 'enforce',
    routes: [{ path: '/', min_assurance: 'passkey', allow: { orgs: [{ slug: 'acme' }], users: ['Bob'] } }],
  };
  const directory = {
    identities: {
      u1: { username: 'alice', orgs: [{ slug: 'acme', role: 'member' as const }] },
      u2: { username: 'bob' },
    },
  };
  t.match(evaluatePolicy(policy, '/x', caller(), directory), { outcome: 'allow', route: { path: '/' } });
  t.match(evaluatePolicy(policy, '/x', caller({ subject: 'u2' }), directory), { outcome: 'allow' });
  t.match(evaluatePolicy(policy, '/x', caller({ subject: 'u3' }), directory), {
    outcome: 'refuse',
    reason: 'access_denied',
    access: { allowed: false, refusal: 'no_rule_matched' },
  });
  t.match(
    evaluatePolicy(policy, '/x', caller({ subject: 'u3', assurance: 'email' }), directory),
    { reason: 'insufficient_user_authentication' },
    'a stranger too weak is first asked to step up',
  );
  t.match(evaluatePolicy(policy, '/x', caller(), undefined), { reason: 'access_denied' }, 'no directory, no member');
  t.match(evaluatePolicy({ ...policy, mode: 'observe' }, '/x', caller({ subject: 'u3' }), directory), {
    outcome: 'allow',
    wouldRefuse: 'access_denied',
  });
  const agentRoute: GatewayPolicy = { mode: 'enforce', routes: [{ path: '/', allow: { agent_owners_in: ['acme'] } }] };
  t.match(
    evaluatePolicy(agentRoute, '/', caller({ subject: 'agt_1', principalType: 'agent', ownerId: 'u1' }), directory),
    { outcome: 'allow' },
  );
  t.match(
    evaluatePolicy(agentRoute, '/', caller({ subject: 'agt_1', principalType: 'agent', ownerId: 'u2' }), directory),
    {
      reason: 'access_denied',
    },
  );
});

t.test('observe passes through and says what it would refuse', async (t) => {
  const observe: GatewayPolicy = { mode: 'observe', routes };
  t.match(evaluatePolicy(observe, '/api/admin', caller()), {
    outcome: 'allow',
    enforced: false,
    wouldRefuse: 'insufficient_user_authentication',
  });
  t.match(evaluatePolicy(observe, '/home', null), { outcome: 'allow', enforced: false, wouldRefuse: 'unauthorized' });
  t.match(
    evaluatePolicy(observe, '/home', caller()),
    { outcome: 'allow', enforced: false },
    'an allowed request under observe was not enforced either',
  );
  t.match(evaluatePolicy(enforce, '/home', caller()), { outcome: 'allow', enforced: true });
});

t.test('canary enforces for a stable share of sessions', async (t) => {
  const ids = Array.from({ length: 400 }, (_, i) => `session-${i}`);
  const canary: GatewayPolicy = { mode: 'canary', canary_percent: 25, routes };
  const enforced = ids.filter(
    (id) => evaluatePolicy(canary, '/api/admin', caller({ bucketId: id })).outcome === 'refuse',
  );
  t.ok(enforced.length > 50 && enforced.length < 150, `about a quarter enforced (${enforced.length})`);
  for (const id of enforced.slice(0, 20))
    t.equal(evaluatePolicy(canary, '/api/admin', caller({ bucketId: id })).outcome, 'refuse', 'stable');
  t.equal(canaryBucket('x'), canaryBucket('x'));
  t.equal(
    ids.filter(
      (id) =>
        evaluatePolicy({ ...canary, canary_percent: 0 }, '/api/admin', caller({ bucketId: id })).outcome === 'refuse',
    ).length,
    0,
  );
  t.equal(
    ids.filter(
      (id) =>
        evaluatePolicy({ ...canary, canary_percent: 100 }, '/api/admin', caller({ bucketId: id })).outcome === 'refuse',
    ).length,
    400,
  );
  t.equal(evaluatePolicy(canary, '/home', null).outcome, 'allow', 'an anonymous caller has no bucket and is observed');
});

t.test('checks a policy document and lists every problem', async (t) => {
  t.same(checkGatewayPolicy(enforce), []);
  const problems = checkGatewayPolicy({
    mode: 'strict',
    canary_percent: 101,
    routes: [
      {
        path: 'api',
        min_assurance: 'high',
        principals: ['robot'],
        scopes: [''],
        dpop: 'maybe',
        public: 'yes',
        extra: 1,
      },
      3,
    ],
  });
  t.equal(problems.length, 10, problems.join('\n'));
  t.same(checkGatewayPolicy(null), ['gateway must be an object']);
  t.same(checkGatewayPolicy({ mode: 'enforce' }), ['gateway.routes must be an array']);
  t.same(
    checkGatewayPolicy({ mode: 'enforce', routes: [{ path: '/', allow: { orgs: [{ slug: 'a', roles: ['boss'] }] } }] }),
    ['gateway.routes[0].allow.orgs[0].roles must list owner, admin and/or member'],
  );
});
