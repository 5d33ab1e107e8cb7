import t from 'tap';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { leaves, loadControlPlaneConfig, loadGatewayConfig } from '#config/load.js';
import { schemas, type ConfigKind } from '#config/schema.js';
import { flagsToConfig } from '../../cli/src/options.js';
import { tempDir } from '../helpers/build.js';

/** The deploy/ examples: every YAML parses, and what the manifests ask of keyplane exists. */
const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));

/** The flags each command documents (docs/cli.md). */
const DOCUMENTED_FLAGS: Record<ConfigKind, string[]> = {
  'control-plane': ['--config', '--host', '--port', '--data', '--issuer', '--redis'],
  gateway: [
    '--config',
    '--host',
    '--port',
    '--public-url',
    '--control-plane',
    '--upstream',
    '--client-id',
    '--client-secret',
    '--trusted-proxies',
    '--redis',
  ],
};

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(entry.name) ? [path] : [];
  });
}

interface K8sObject {
  kind: string;
  metadata: { name: string };
  spec?: any;
  data?: Record<string, string>;
}
interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: Array<{ name: string }>;
}

const objects: K8sObject[] = [];
for (const file of yamlFiles(DEPLOY)) {
  t.test(`${relative(DEPLOY, file)} parses as YAML`, async (t) => {
    const documents = parseAllDocuments(readFileSync(file, 'utf8'));
    t.ok(documents.length > 0);
    for (const document of documents) {
      t.same(document.errors, [], 'no parse errors');
      const value = document.toJS() as K8sObject | null;
      if (file.includes('/kubernetes/') && value) objects.push(value);
    }
  });
}

/** Environment names the config schema of `kind` reads (plus KEYPLANE_CONFIG). */
function envNames(kind: ConfigKind): Set<string> {
  return new Set([
    'KEYPLANE_CONFIG',
    ...leaves(schemas[kind]).flatMap(([, leaf]) => (typeof leaf['env'] === 'string' ? [leaf['env']] : [])),
  ]);
}

/** A value each secret-sourced variable accepts (the manifests take them from a Secret). */
function sampleEnv(names: string[]): Record<string, string> {
  const samples: Record<string, string> = { KEYPLANE_GATEWAY_COOKIE_KEYS: Buffer.alloc(32, 7).toString('base64url') };
  return Object.fromEntries(names.map((name) => [name, samples[name] ?? 'x'.repeat(40)]));
}

function keyplaneContainers(kind: ConfigKind): Array<{ deployment: K8sObject; container: Container }> {
  return objects
    .filter((o) => o.kind === 'Deployment')
    .flatMap((deployment) =>
      (deployment.spec.template.spec.containers as Container[])
        .filter(
          (container) =>
            (container.command ?? []).some((part) => /main\.js$|^keyplane$/.test(part)) &&
            container.command!.at(-1) === kind,
        )
        .map((container) => ({ deployment, container })),
    );
}

/** `[--flag, value, …]` into commander's option object (camel-cased names). */
function parseArgs(args: string[]): Record<string, string> {
  const options: Record<string, string> = {};
  for (let i = 0; i < args.length; i += 2) {
    t.match(args[i], /^--[a-z-]+$/, `${args[i]} is a flag`);
    options[args[i]!.slice(2).replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase())] = args[i + 1]!;
  }
  return options;
}

t.test('the Kubernetes manifests run keyplane with flags, environment and config it knows', async (t) => {
  const gateways = objects.filter((o) => o.kind === 'Deployment' && o.metadata.name === 'keyplane-gateway');
  t.equal(gateways.length, 1);
  t.equal(gateways[0]!.spec.replicas, 2, 'two gateway replicas');
  const controlPlanes = objects.filter((o) => o.kind === 'Deployment' && o.metadata.name === 'keyplane-control-plane');
  t.equal(controlPlanes[0]?.spec.replicas, 1, 'one control plane on SQLite');
  t.equal(controlPlanes[0]?.spec.strategy?.type, 'Recreate', 'never two pods on one database');
  t.ok(
    objects.some((o) => o.kind === 'PersistentVolumeClaim'),
    'its data dir is a volume',
  );
  t.ok(
    objects.some((o) => o.kind === 'Service' && o.metadata.name === 'keyplane-redis'),
    'Redis is reachable',
  );

  for (const kind of ['gateway', 'control-plane'] as const) {
    const found = keyplaneContainers(kind);
    t.equal(found.length, 1, `one ${kind} container`);
    const { deployment, container } = found[0]!;
    const args = container.args ?? [];
    t.ok(args.includes('--redis'), `${kind} shares Redis`);
    for (const flag of args.filter((arg) => arg.startsWith('--')))
      t.ok(DOCUMENTED_FLAGS[kind].includes(flag), `${kind} ${flag} is a documented flag`);
    const names = (container.env ?? []).map((entry) => entry.name);
    const known = envNames(kind);
    for (const name of names) t.ok(known.has(name), `${kind} reads ${name} (config/schema.ts)`);

    const probes = (deployment.spec.template.spec.containers as Array<Record<string, any>>).find(
      (c) => c['name'] === container.name,
    )!;
    t.equal(probes['readinessProbe']?.httpGet?.path, '/readyz');
    t.equal(probes['livenessProbe']?.httpGet?.path, '/healthz');

    // The config file the container mounts is the ConfigMap's, and it loads with these flags and env.
    const configPath = args[args.indexOf('--config') + 1]!;
    const mapName = (deployment.spec.template.spec.volumes as Array<Record<string, any>>).find((v) => v['configMap'])![
      'configMap'
    ].name as string;
    const map = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === mapName)!;
    const fileName = configPath.split('/').at(-1)!;
    t.ok(map.data?.[fileName], `ConfigMap ${mapName} holds ${fileName}`);
    const dir = tempDir(t, 'keyplane-deploy-');
    const local = join(dir, fileName);
    writeFileSync(local, map.data![fileName]!);
    const flags = flagsToConfig(kind, { ...parseArgs(args), config: local });
    const load = kind === 'gateway' ? loadGatewayConfig : loadControlPlaneConfig;
    t.doesNotThrow(() => load({ flags, env: sampleEnv(names) }), `${kind} config loads`);
  }
});

t.test('the gateway replicas share cookie keys and the assertion signing key', async (t) => {
  const gateway = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'keyplane-gateway')!;
  const container = (gateway.spec.template.spec.containers as Array<Record<string, any>>)[0]!;
  t.ok(
    (container['env'] as Array<{ name: string; valueFrom?: unknown }>).some(
      (e) => e.name === 'KEYPLANE_GATEWAY_COOKIE_KEYS' && e.valueFrom,
    ),
  );
  const mounts = container['volumeMounts'] as Array<{ mountPath: string; subPath?: string }>;
  t.ok(
    mounts.some((m) => m.mountPath === '/var/lib/keyplane/gateway-signing-key.json' && m.subPath),
    'the signing key is one file from the Secret',
  );
});

t.test('the PostgreSQL variant runs several control planes on one database, migrated once per rollout', async (t) => {
  const file = join(DEPLOY, 'kubernetes-postgres', 'control-plane.yaml');
  const docs = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as K8sObject);
  const deployment = docs.find((o) => o.kind === 'Deployment' && o.metadata.name === 'keyplane-control-plane')!;
  t.ok(deployment.spec.replicas > 1, 'more than one replica');
  t.equal(deployment.spec.strategy.type, 'RollingUpdate');
  const pod = deployment.spec.template.spec;
  t.notOk(
    (pod.volumes as Array<Record<string, unknown>>).some((v) => v['persistentVolumeClaim']),
    'no volume: nothing durable in the pod',
  );
  const [migrate] = pod.initContainers as Container[];
  t.same(migrate!.command!.slice(-1), ['migrate'], 'an init container runs keyplane migrate');
  const [container] = pod.containers as Container[];
  const names = (container!.env ?? []).map((e) => e.name);
  t.ok(
    names.includes('KEYPLANE_DATABASE_URL') && names.includes('KEYPLANE_MASTER_KEY'),
    'database URL and the shared master key',
  );
  const known = envNames('control-plane');
  for (const name of [...names, ...(migrate!.env ?? []).map((e) => e.name)])
    t.ok(known.has(name), `reads ${name} (config/schema.ts)`);
  const args = container!.args ?? [];
  t.ok(args.includes('--redis'), 'shares Redis');
  const map = docs.find((o) => o.kind === 'ConfigMap')!;
  const dir = tempDir(t, 'keyplane-deploy-');
  writeFileSync(join(dir, 'control-plane.yaml'), map.data!['control-plane.yaml']!);
  const config = loadControlPlaneConfig({
    flags: flagsToConfig('control-plane', { ...parseArgs(args), config: join(dir, 'control-plane.yaml') }),
    env: {
      ...sampleEnv(names.filter((n) => n !== 'KEYPLANE_DATABASE_URL' && n !== 'KEYPLANE_DATA_DIR')),
      KEYPLANE_DATABASE_URL: 'postgres://keyplane@db/keyplane',
    },
  });
  t.equal(config.database.migrateOnStart, false, 'replicas leave migrations to the init container');
  t.equal(config.databaseUrl, 'postgres://keyplane@db/keyplane');
});
