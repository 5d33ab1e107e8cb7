import t from 'tap';
import { parseGatewayPolicy, POLICY_LIMITS } from '#lib/gateway-protocol/parse-policy.js';
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';

// One reader of a gateway policy (docs/gateway.md#policy): registration applies the shape and the
// authoring rules, enforcement the shape only; neither passes over an unknown key or a bad value.
const registration = (value: unknown) => parseGatewayPolicy(value, { at: 'registration' });
const enforcement = (value: unknown) => parseGatewayPolicy(value, { at: 'enforcement' });

t.test('the same document parses to the same policy at both ends', async (t) => {
  const document = {
    mode: 'canary',
    canary_percent: 20,
    accept_clients: ['app_a', 'app_a'],
    routes: [
      { path: '/', min_assurance: 'passkey', principals: ['human', 'human'] },
      { path: '/mcp', mcp: true, tools: { delete_x: { min_assurance: 'sensitive' } } },
      { path: '/health', public: true },
      { path: '/off', mcp: false },
    ],
  };
  const expected = {
    mode: 'canary',
    canary_percent: 20,
    accept_clients: ['app_a'],
    routes: [
      { path: '/', min_assurance: 'passkey', principals: ['human'] },
      { path: '/mcp', mcp: true, tools: { delete_x: { min_assurance: 'sensitive' } } },
      { path: '/health', public: true },
      { path: '/off' },
    ],
  };
  t.same(registration(document), { policy: expected, problems: [] });
  t.same(enforcement(document), { policy: expected, problems: [] });
});

t.test('registration refuses what breaks an authoring rule; enforcement takes what was registered', async (t) => {
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['reserved path', { mode: 'enforce', routes: [{ path: '/_gate/x' }] }, /must not be under the reserved \/_gate\//],
    [
      'repeated path',
      { mode: 'enforce', routes: [{ path: '/a' }, { path: '/a' }] },
      /\[1\]\.path repeats another route/,
    ],
    ['query in path', { mode: 'enforce', routes: [{ path: '/a?b' }] }, /without query or fragment/],
    ['canary without percent', { mode: 'canary', routes: [] }, /canary_percent is required in canary mode/],
    ['tools without mcp', { mode: 'enforce', routes: [{ path: '/x', tools: {} }] }, /tools needs mcp: true/],
    [
      'forward_token without mcp',
      { mode: 'enforce', routes: [{ path: '/x', forward_token: true }] },
      /forward_token needs mcp: true/,
    ],
    [
      'public that demands',
      { mode: 'enforce', routes: [{ path: '/x', public: true, min_assurance: 'email' }] },
      /is public and cannot/,
    ],
    ['public false', { mode: 'enforce', routes: [{ path: '/x', public: false }] }, /public must be true when present/],
    [
      'resource set by hand',
      { mode: 'enforce', routes: [{ path: '/x', resource: 'https://a.example/x' }] },
      /resource is not a known key/,
    ],
    [
      'too many routes',
      { mode: 'enforce', routes: Array.from({ length: POLICY_LIMITS.routes + 1 }, (_, i) => ({ path: `/r${i}` })) },
      /has more than 200 entries/,
    ],
  ];
  for (const [name, document, problem] of cases) {
    const registered = registration(document);
    t.equal(registered.policy, null, name);
    t.match(registered.problems.join('\n'), problem, name);
    t.same(enforcement(document).problems, [], `${name}: a gateway still enforces a config that says so`);
  }
});

t.test('enforcement still fails closed on an unknown key or a malformed value', async (t) => {
  for (const [document, problem] of [
    [{ mode: 'enforce', routes: [{ path: '/', max_rate: 10 }] }, 'gateway.routes[0].max_rate is not a known key'],
    [
      { mode: 'enforce', routes: [{ path: '/', min_assurance: 'high' }] },
      'gateway.routes[0].min_assurance must be one of: recovery, email, passkey, sensitive',
    ],
    [
      { mode: 'enforce', routes: [{ path: '/', tools: { t: { y: 1 } } }] },
      'gateway.routes[0].tools.t.y is not a known key',
    ],
    [{ mode: 'lenient', routes: [] }, 'gateway.mode must be one of: observe, canary, enforce'],
  ] as const) {
    const parsed = enforcement(document);
    t.equal(parsed.policy, null);
    t.same(parsed.problems, [problem]);
  }
});

t.test('registration names every problem at once and normalizes scopes', async (t) => {
  const parsed = parseGatewayPolicy(
    {
      mode: 'enforce',
      routes: [
        { path: '/a', scopes: ['read', 'read'] },
        { path: 'b', dpop: 'maybe' },
      ],
    },
    { at: 'registration', scopeTokens: (value) => [...new Set(value.split(' '))] },
  );
  t.same(parsed.problems, [
    'gateway.routes[1].path must be a path starting with /',
    'gateway.routes[1].dpop must be one of: required, allowed',
  ]);
  const fine = parseGatewayPolicy(
    { mode: 'enforce', routes: [{ path: '/a', scopes: ['read', 'read'] }] },
    { at: 'registration', scopeTokens: (value) => [...new Set(value.split(' '))] },
  );
  t.same(fine.policy?.routes, [{ path: '/a', scopes: ['read'] }]);
});

t.test('client registration refuses with exactly what the parser names', async (t) => {
  const gateway = { mode: 'canary', routes: [{ path: '/_gate/x' }, { path: '/a', dpop: 'maybe' }] };
  const { problems } = registration(gateway);
  t.equal(problems.length, 3);
  t.throws(() => validateClientMetadata({ redirect_uris: ['https://app.example.com/_gate/callback'], gateway }), {
    reason: 'invalid_client_metadata',
    message: problems.join('; '),
  });
});
