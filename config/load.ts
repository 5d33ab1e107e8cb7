import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import { deepFreeze } from '#lib/runtime/deep-freeze.js';
import { isValidAddressEntry } from '#lib/net/cidr.js';
import { ConfigError } from './config-error.js';
import { schemas, type ConfigKind, type Node } from './schema.js';
import { coerce, isGroup, leaves, type Leafish } from './schema-leaves.js';
import type { ControlPlaneConfig, ControlPlaneSettings, GatewayConfig, GatewaySettings } from './types.js';

export { ConfigError } from './config-error.js';
export { readAdminToken, readClientSecret } from './env.js';
export { coerce, leaves } from './schema-leaves.js';

export interface LoadOptions {
  /** Values from command-line flags, keyed by config key path (`dataDir`, `http.bodyLimit`). */
  flags?: Record<string, unknown>;
  /** A YAML file; falls back to KEYPLANE_CONFIG. */
  file?: string;
  /** Values given in code (tests, `keyplane up`), applied after flags. */
  overrides?: Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
// Compiled on first use, and only the kind asked for: a gateway never compiles the control plane's schema.
let ajv: Ajv | undefined;
const validators = new Map<ConfigKind, ValidateFunction>();

function validatorOf(kind: ConfigKind): ValidateFunction {
  let validate = validators.get(kind);
  if (!validate) {
    // strict: false lets the documentation keywords (env, flag, secret) sit beside the validation ones.
    ajv ??= addFormats(new Ajv({ allErrors: true, strict: false }));
    validate = ajv.compile(schemas[kind]);
    validators.set(kind, validate);
  }
  return validate;
}

export function loadControlPlaneConfig(options: LoadOptions = {}): ControlPlaneConfig {
  return load('control-plane', options) as ControlPlaneConfig;
}

export function loadGatewayConfig(options: LoadOptions = {}): GatewayConfig {
  return load('gateway', options) as GatewayConfig;
}

/** Where a gateway keeps its state when no `dataDir` is given: one directory per client id. */
export function defaultGatewayDataDir(clientId: string | undefined): string {
  return clientId ? join('data', 'gateways', clientId.replace(/[^A-Za-z0-9_-]/g, '_')) : join('data', 'gateway');
}

/** Every key with its default, as the schema declares them. */
export function defaultsOf(kind: ConfigKind): Record<string, unknown> {
  return collectDefaults(schemas[kind]) as Record<string, unknown>;
}

function load(kind: ConfigKind, options: LoadOptions): ControlPlaneSettings | GatewaySettings {
  const env = options.env ?? process.env;
  const problems: string[] = [];
  let merged = defaultsOf(kind);

  const file = options.file ?? (options.flags?.['config'] as string | undefined) ?? env['KEYPLANE_CONFIG'];
  if (file) {
    const fromFile = readYaml(file, problems);
    if (fromFile) merged = mergeDeep(merged, fromFile);
  }
  merged = mergeDeep(merged, fromEnv(kind, env, problems));
  const { config: _ignored, ...flags } = options.flags ?? {};
  merged = mergeDeep(merged, expandPaths(flags));
  merged = mergeDeep(merged, expandPaths(options.overrides ?? {}));

  const validate = validatorOf(kind);
  // A value can break several keywords that read alike (a URL's `format` and its `pattern`): say it once.
  if (!validate(merged)) problems.push(...new Set((validate.errors ?? []).map(describeAjvError)));
  else problems.push(...semanticProblems(merged));
  if (problems.length > 0) throw new ConfigError(problems);
  if (kind === 'gateway' && merged['dataDir'] === undefined)
    merged['dataDir'] = defaultGatewayDataDir(merged['clientId'] as string | undefined);
  return deepFreeze(merged) as unknown as ControlPlaneSettings | GatewaySettings;
}

function readYaml(file: string, problems: string[]): Record<string, unknown> | undefined {
  let text: string;
  try {
    text = readFileSync(resolve(file), 'utf8');
  } catch (error) {
    problems.push(`config file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    return undefined;
  }
  try {
    const parsed: unknown = parseYaml(text);
    if (parsed === null || parsed === undefined) return {};
    if (typeof parsed !== 'object' || Array.isArray(parsed)) {
      problems.push(`config file ${file} must hold a mapping at the top level`);
      return undefined;
    }
    return parsed as Record<string, unknown>;
  } catch (error) {
    problems.push(`config file ${file} is not valid YAML: ${(error as Error).message.split('\n')[0]}`);
    return undefined;
  }
}

function fromEnv(kind: ConfigKind, env: NodeJS.ProcessEnv, problems: string[]): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [path, leaf] of leaves(schemas[kind])) {
    const raw = leaf.env ? env[leaf.env] : undefined;
    if (raw === undefined || raw === '') continue;
    const value = coerce(raw, leaf);
    if (value === undefined) problems.push(`${leaf.env} must be ${leaf.type}`);
    else values[path] = value;
  }
  return expandPaths(values);
}

function semanticProblems(config: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const lists: Array<[string, unknown]> = [
    ['trustedProxies', config['trustedProxies']],
    ['http.trustedProxies', (config['http'] as Record<string, unknown> | undefined)?.['trustedProxies']],
  ];
  for (const [path, list] of lists) {
    if (!Array.isArray(list)) continue;
    list.forEach((entry: string, index) => {
      if (!isValidAddressEntry(entry))
        problems.push(`${path}[${index}] must be an IP address or CIDR range (got "${entry}")`);
    });
  }
  problems.push(...redisProblems(config), ...tlsProblems(config));
  problems.push(...metadataProblems(config));
  const caFile = (config['fetch'] as Record<string, unknown> | undefined)?.['caFile'];
  if (typeof caFile === 'string') {
    let pem = '';
    try {
      pem = readFileSync(resolve(caFile), 'utf8');
    } catch {
      problems.push(`fetch.caFile ${caFile} cannot be read`);
    }
    if (pem && !pem.includes('-----BEGIN CERTIFICATE-----'))
      problems.push(`fetch.caFile ${caFile} holds no PEM certificate`);
  }
  return problems;
}

/** Both TLS files or neither, each a readable PEM of its kind: a typo stops the start, never serves plain HTTP. */
function tlsProblems(config: Record<string, unknown>): string[] {
  const tls = (config['tls'] ?? {}) as { cert?: string; key?: string };
  if (tls.cert === undefined && tls.key === undefined) return [];
  if (tls.cert === undefined || tls.key === undefined)
    return [`tls.${tls.cert === undefined ? 'cert' : 'key'} is not set: --tls-cert and --tls-key go together`];
  const problems: string[] = [];
  for (const [name, file, marker] of [
    ['tls.cert', tls.cert, 'CERTIFICATE-----'],
    ['tls.key', tls.key, 'PRIVATE KEY-----'],
  ] as const) {
    let pem: string;
    try {
      pem = readFileSync(resolve(file), 'utf8');
    } catch {
      problems.push(`${name} ${file} cannot be read`);
      continue;
    }
    if (!pem.includes(marker)) problems.push(`${name} ${file} holds no PEM ${marker.replace(/-+$/, '').toLowerCase()}`);
  }
  return problems;
}

/** One metadata source at most, and a root file that holds a certificate: a typo stops the start. */
function metadataProblems(config: Record<string, unknown>): string[] {
  const mds = ((config['passkeys'] as Record<string, unknown> | undefined)?.['mds'] ?? {}) as {
    url?: string;
    file?: string;
    rootCertificateFile?: string;
  };
  const problems: string[] = [];
  if (mds.url !== undefined && mds.file !== undefined)
    problems.push('passkeys.mds.url and passkeys.mds.file name the metadata twice: set only one of them');
  for (const [name, file, marker] of [
    ['passkeys.mds.file', mds.file, '.'],
    ['passkeys.mds.rootCertificateFile', mds.rootCertificateFile, '-----BEGIN CERTIFICATE-----'],
  ] as const) {
    if (file === undefined) continue;
    let text: string;
    try {
      text = readFileSync(resolve(file), 'utf8');
    } catch {
      problems.push(`${name} ${file} cannot be read`);
      continue;
    }
    if (!text.includes(marker)) problems.push(`${name} ${file} holds no ${marker === '.' ? 'JWT' : 'PEM certificate'}`);
  }
  return problems;
}

/** One Redis, named one way: a URL, Sentinels with their master name, or Cluster nodes. */
function redisProblems(config: Record<string, unknown>): string[] {
  const redis = config['redis'] as
    | {
        sentinels: string[];
        masterName?: string;
        clusterNodes: string[];
        waitTimeoutMs: number;
        commandTimeoutMs: number;
      }
    | undefined;
  if (!redis) return [];
  const problems: string[] = [];
  const ways = [
    config['redisUrl'] !== undefined && 'redisUrl',
    redis.sentinels.length > 0 && 'redis.sentinels',
    redis.clusterNodes.length > 0 && 'redis.clusterNodes',
  ].filter(Boolean);
  if (ways.length > 1) problems.push(`${ways.join(' and ')} name Redis twice: set only one of them`);
  if (redis.sentinels.length > 0 && redis.masterName === undefined)
    problems.push('redis.sentinels needs redis.masterName, the master the Sentinels monitor');
  if (redis.masterName !== undefined && redis.sentinels.length === 0)
    problems.push('redis.masterName is set without redis.sentinels');
  if (redis.waitTimeoutMs >= redis.commandTimeoutMs)
    problems.push('redis.waitTimeoutMs must be less than redis.commandTimeoutMs');
  return problems;
}

function describeAjvError(error: ErrorObject): string {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('')
    .replace(/^\./, '');
  const where = path || '(top level)';
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return `${path ? `${path}.` : ''}${String(params['additionalProperty'])} is not a known key`;
    case 'enum':
      return `${where} must be one of: ${(params['allowedValues'] as unknown[]).join(', ')}`;
    case 'type':
      return `${where} must be ${String(params['type'])}`;
    case 'minimum':
    case 'maximum':
      return `${where} must be ${error.keyword === 'minimum' ? '>=' : '<='} ${String(params['limit'])}`;
    case 'minLength':
      return `${where} must be at least ${String(params['limit'])} characters`;
    case 'pattern':
    case 'format':
      return `${where} is not a valid ${describeShape(path)}`;
    default:
      return `${where} ${error.message ?? 'is invalid'}`;
  }
}

function describeShape(path: string): string {
  if (/url$|issuer$|controlPlane$|upstream$/i.test(path)) return 'URL for this key';
  return 'value';
}

function collectDefaults(node: Node): unknown {
  if (isGroup(node)) {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(node.properties)) {
      const value = collectDefaults(child);
      if (value !== undefined) out[key] = value;
    }
    return out;
  }
  const value = (node as Leafish).default;
  return value === undefined ? undefined : structuredClone(value);
}

function expandPaths(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [path, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const parts = path.split('.');
    let cursor = out;
    for (const part of parts.slice(0, -1)) cursor = (cursor[part] ??= {}) as Record<string, unknown>;
    cursor[parts[parts.length - 1]!] = value;
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function mergeDeep(base: Record<string, unknown>, next: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(next)) {
    out[key] =
      isPlainObject(value) && isPlainObject(out[key]) ? mergeDeep(out[key] as Record<string, unknown>, value) : value;
  }
  return out;
}
