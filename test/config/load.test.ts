import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, defaultsOf, loadControlPlaneConfig, loadGatewayConfig } from '#config/load.js';
import { tempDir } from '../helpers/build.js';

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

t.test('defaults alone are a valid, frozen configuration', async (t) => {
  const config = loadControlPlaneConfig({ env: {} });
  t.equal(config.port, 4400);
  t.equal(config.host, '127.0.0.1');
  t.equal(config.dataDir, './data');
  t.equal(config.http.bodyLimit, 1_048_576);
  t.equal(config.issuer, undefined);
  t.ok(Object.isFrozen(config) && Object.isFrozen(config.http) && Object.isFrozen(config.http.trustedProxies));
  t.throws(() => {
    (config as { port: number }).port = 1;
  });
  t.equal(loadGatewayConfig({ env: {} }).port, 4480);
});

t.test('defaults, then YAML, then env, then flags: later sources win', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'kp.yaml');
  writeFileSync(file, 'port: 5000\ndataDir: /from/yaml\nhttp:\n  bodyLimit: 4096\nlogLevel: warn\n');
  const config = loadControlPlaneConfig({
    env: { KEYPLANE_CONFIG: file, KEYPLANE_DATA_DIR: '/from/env', KEYPLANE_ISSUER: 'https://id.example.com' },
    flags: { dataDir: '/from/flag' },
  });
  t.equal(config.port, 5000, 'YAML over defaults');
  t.equal(config.http.bodyLimit, 4096, 'nested YAML keys merge');
  t.same(config.http.trustedProxies, ['127.0.0.1/8', '::1'], 'siblings of a nested YAML key keep their defaults');
  t.equal(config.issuer, 'https://id.example.com', 'env over YAML');
  t.equal(config.dataDir, '/from/flag', 'flags over env');
  t.equal(config.logLevel, 'warn');
});

t.test('the --config flag names the file', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'kp.yaml');
  writeFileSync(file, 'port: 4411\n');
  t.equal(loadControlPlaneConfig({ env: {}, flags: { config: file } }).port, 4411);
});

t.test('every problem is listed at once, each with its key path', async (t) => {
  const dir = tempDir(t);
  const cases: Array<{
    name: string;
    yaml?: string;
    env?: Record<string, string>;
    flags?: Record<string, unknown>;
    problems: Array<string | RegExp>;
  }> = [
    { name: 'unknown top-level key', yaml: 'prot: 4400\n', problems: ['prot is not a known key'] },
    { name: 'unknown nested key', yaml: 'http:\n  bodylimit: 10\n', problems: ['http.bodylimit is not a known key'] },
    { name: 'wrong type', yaml: 'port: "x"\n', problems: ['port must be integer'] },
    { name: 'out of range', yaml: 'port: 70000\n', problems: ['port must be <= 65535'] },
    { name: 'below minimum', yaml: 'http:\n  bodyLimit: 10\n', problems: ['http.bodyLimit must be >= 1024'] },
    {
      name: 'enum',
      yaml: 'logLevel: loud\n',
      problems: ['logLevel must be one of: fatal, error, warn, info, debug, trace, silent'],
    },
    {
      name: 'issuer with trailing slash',
      env: { KEYPLANE_ISSUER: 'https://id.example.com/' },
      problems: ['issuer is not a valid URL for this key'],
    },
    {
      name: 'redis URL scheme',
      env: { KEYPLANE_REDIS_URL: 'http://127.0.0.1:6379' },
      problems: ['redisUrl is not a valid URL for this key'],
    },
    {
      name: 'short master key',
      env: { KEYPLANE_MASTER_KEY: 'short' },
      problems: ['masterKey must be at least 32 characters'],
    },
    {
      name: 'bad CIDR',
      yaml: 'http:\n  trustedProxies: [10.0.0.0/8, 10.0.0.0/99, nope]\n',
      problems: [
        'http.trustedProxies[1] must be an IP address or CIDR range (got "10.0.0.0/99")',
        'http.trustedProxies[2] must be an IP address or CIDR range (got "nope")',
      ],
    },
    {
      name: 'several at once',
      yaml: 'port: -1\nlogLevel: 3\nlimits:\n  lockoutThreshold: 0\n',
      problems: [
        'port must be >= 0',
        'logLevel must be string',
        'logLevel must be one of: fatal, error, warn, info, debug, trace, silent',
        'limits.lockoutThreshold must be >= 1',
      ],
    },
    { name: 'non-numeric flag', flags: { port: 'abc' }, problems: ['port must be integer'] },
    { name: 'YAML that is not a mapping', yaml: '- a\n- b\n', problems: [/must hold a mapping at the top level/] },
  ];
  for (const [i, c] of cases.entries()) {
    const env: Record<string, string> = { ...c.env };
    if (c.yaml !== undefined) {
      const file = join(dir, `case-${i}.yaml`);
      writeFileSync(file, c.yaml);
      env['KEYPLANE_CONFIG'] = file;
    }
    const problems = problemsOf(() => loadControlPlaneConfig({ env, ...(c.flags ? { flags: c.flags } : {}) }));
    if (c.problems[0] instanceof RegExp) t.match(problems, c.problems, c.name);
    else t.same(problems, c.problems, c.name);
  }
});

t.test('fetch.caFile must be a readable PEM certificate file', async (t) => {
  const dir = tempDir(t);
  const notPem = join(dir, 'ca.txt');
  writeFileSync(notPem, 'hello');
  const pem = join(dir, 'ca.pem');
  writeFileSync(pem, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
  const load = (caFile: string) =>
    problemsOf(() => loadControlPlaneConfig({ env: {}, overrides: { fetch: { caFile } } }));
  t.same(load(join(dir, 'missing.pem')), [`fetch.caFile ${join(dir, 'missing.pem')} cannot be read`]);
  t.same(load(notPem), [`fetch.caFile ${notPem} holds no PEM certificate`]);
  t.same(load(pem), []);
  t.equal(
    loadControlPlaneConfig({ env: {} }).fetch.allowPrivateTargets,
    false,
    'private targets are refused by default',
  );
});

t.test('an unreadable or invalid YAML file is a problem, not a crash', async (t) => {
  const dir = tempDir(t);
  t.match(
    problemsOf(() => loadControlPlaneConfig({ env: { KEYPLANE_CONFIG: join(dir, 'missing.yaml') } })),
    [/cannot be read \(ENOENT\)/],
  );
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'port: [1,\n');
  t.match(
    problemsOf(() => loadControlPlaneConfig({ env: { KEYPLANE_CONFIG: bad } })),
    [/is not valid YAML/],
  );
});

t.test('gateway settings: env secret, list flags, URL checks', async (t) => {
  const config = loadGatewayConfig({
    env: { KEYPLANE_GATEWAY_CLIENT_SECRET: 's3cret' },
    flags: { trustedProxies: ['10.0.0.0/8', '::1'], upstream: 'http://127.0.0.1:9000' },
  });
  t.equal(config.clientSecret, 's3cret');
  t.same(config.trustedProxies, ['10.0.0.0/8', '::1']);
  t.same(
    problemsOf(() => loadGatewayConfig({ env: {}, flags: { publicUrl: 'http://gw.example.com/path' } })),
    ['publicUrl is not a valid URL for this key'],
  );
});

t.test('gateway settings added for the gateway: upstreams, cookie keys, lifetimes', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, 'upstreams:\n  - path: /api\n    url: http://127.0.0.1:9001\n');
  const key = 'A'.repeat(43);
  const config = loadGatewayConfig({ env: { KEYPLANE_CONFIG: file, KEYPLANE_GATEWAY_COOKIE_KEYS: key } });
  t.same(config.upstreams, [{ path: '/api', url: 'http://127.0.0.1:9001' }]);
  t.same(config.cookieKeys, [key], 'cookie keys come from the environment');
  t.equal(config.assertionLifetime, 60);
  t.equal(config.dpopNonce, false);
  const refused: Array<[string, string]> = [
    ['upstreams:\n  - path: api\n    url: http://127.0.0.1:9001\n', 'upstreams[0].path'],
    ['upstreams:\n  - path: /api\n    url: http://127.0.0.1:9001/v1\n', 'upstreams[0].url'],
    ['upstreams:\n  - path: /api\n', 'upstreams[0]'],
    ['cookieKeys: [short]\n', 'cookieKeys[0]'],
    ['assertionLifetime: 301\n', 'assertionLifetime'],
  ];
  for (const [yaml, key] of refused) {
    writeFileSync(file, yaml);
    const problems = problemsOf(() => loadGatewayConfig({ env: { KEYPLANE_CONFIG: file } }));
    t.ok(problems.length > 0 && problems.every((p) => p.startsWith(key)), `${key}: ${problems.join('; ')}`);
  }
});

t.test('the example files are valid configurations', async (t) => {
  t.ok(loadControlPlaneConfig({ env: {}, file: 'config/control-plane.example.yaml' }));
  t.ok(loadGatewayConfig({ env: {}, file: 'config/gateway.example.yaml' }));
  t.equal(defaultsOf('control-plane')['port'], 4400);
});

t.test('Redis Sentinel and Cluster: from the environment, one way of naming Redis at a time', async (t) => {
  const sentinel = loadControlPlaneConfig({
    env: {
      KEYPLANE_REDIS_SENTINELS: '10.0.0.1:26379, 10.0.0.2:26379,[fd00::3]:26379',
      KEYPLANE_REDIS_MASTER_NAME: 'keyplane',
      KEYPLANE_REDIS_PASSWORD: 'pw',
    },
  });
  t.same(sentinel.redis.sentinels, ['10.0.0.1:26379', '10.0.0.2:26379', '[fd00::3]:26379']);
  t.equal(sentinel.redis.masterName, 'keyplane');
  t.equal(sentinel.redis.password, 'pw');
  t.equal(sentinel.redis.commandTimeoutMs, 1000, 'the default budget');
  t.equal(sentinel.redis.waitReplicas, 0);
  const cluster = loadGatewayConfig({ env: { KEYPLANE_REDIS_CLUSTER_NODES: 'r1:7000,r2:7000' } });
  t.same(cluster.redis.clusterNodes, ['r1:7000', 'r2:7000']);
  t.equal(cluster.controlPlaneTimeoutMs, 5000);
  t.same(
    problemsOf(() =>
      loadControlPlaneConfig({
        env: { KEYPLANE_REDIS_URL: 'redis://r:6379', KEYPLANE_REDIS_SENTINELS: 's:26379' },
      }),
    ),
    [
      'redisUrl and redis.sentinels name Redis twice: set only one of them',
      'redis.sentinels needs redis.masterName, the master the Sentinels monitor',
    ],
  );
  t.same(
    problemsOf(() => loadControlPlaneConfig({ env: { KEYPLANE_REDIS_MASTER_NAME: 'm' } })),
    ['redis.masterName is set without redis.sentinels'],
  );
  t.same(
    problemsOf(() => loadControlPlaneConfig({ env: { KEYPLANE_REDIS_SENTINELS: 'no-port' } })),
    ['redis.sentinels[0] is not a valid value'],
  );
  t.same(
    problemsOf(() => loadControlPlaneConfig({ env: {}, overrides: { 'redis.waitTimeoutMs': 1000 } })),
    ['redis.waitTimeoutMs must be less than redis.commandTimeoutMs'],
  );
  const database = loadControlPlaneConfig({ env: {} }).database;
  t.same([database.connectTimeoutMs, database.queryTimeoutMs], [2000, 5000], 'the database budgets');
});
