import type { Locale } from '#lib/i18n/locales.js';
import type { DeepReadonly } from '#lib/runtime/deep-freeze.js';
import type { TelemetrySettings } from '#lib/telemetry/tracing.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** Redis beyond one URL: Sentinel or Cluster, credentials, and the budget of each operation. */
export interface RedisSettings {
  sentinels: string[];
  masterName?: string;
  clusterNodes: string[];
  password?: string;
  sentinelPassword?: string;
  tls: boolean;
  commandTimeoutMs: number;
  waitReplicas: number;
  waitTimeoutMs: number;
}

/** PEM files served over HTTPS (docs/operations.md#tls). */
export interface TlsSettings {
  cert?: string;
  key?: string;
}

export interface ControlPlaneSettings {
  host: string;
  port: number;
  workers: number | 'auto';
  tls: TlsSettings;
  issuer?: string;
  dataDir: string;
  redisUrl?: string;
  redis: RedisSettings;
  databaseUrl?: string;
  database: { migrateOnStart: boolean; poolSize: number; connectTimeoutMs: number; queryTimeoutMs: number };
  masterKey?: string;
  adminToken?: string;
  logLevel: LogLevel;
  http: { bodyLimit: number; trustedProxies: string[] };
  dns: { resolvers: string[] };
  keys: { rotateEveryDays: number; retainRetiredDays: number };
  lifetimes: {
    authorizationCode: number;
    accessToken: number;
    idToken: number;
    refreshTokenAbsolute: number;
    refreshTokenIdle: number;
    sessionAbsolute: number;
    sessionIdle: number;
    magicLink: number;
    emailVerification: number;
    challenge: number;
    stepUp: number;
  };
  limits: {
    authPerIpPerMinute: number;
    authPerAccountPerMinute: number;
    lockoutThreshold: number;
    lockoutSeconds: number;
    magicLinksPerAddressPerHour: number;
  };
  scan: { publicPerIpPerHour: number; publicPerHostPerHour: number; cacheSeconds: number; rescanIntervalHours: number };
  signup: { selfService: boolean };
  mail: { smtpUrl?: string; from: string };
  i18n: { defaultLocale: Locale };
  mcp: { perIpPerMinute: number };
  scim: { perTokenPerMinute: number };
  contact: { operatorAddress?: string; perAddressPerHour: number; maxMessageChars: number; retentionDays: number };
  ledger: {
    sealIntervalMs: number;
    sealMaxReceipts: number;
    witnesses: Array<{ name: string; url: string; key: string }>;
    witness: { logs: Array<{ origin: string; key: string }>; perOriginPerMinute: number };
  };
  v1: { sessionTokenLifetime: number; deprecatedAt: string; sunset: string };
  oidc: {
    defaultClientScopes: string[];
    backchannelLogout: { pollIntervalMs: number; maxAttempts: number };
    dpopNonce: boolean;
  };
  fetch: { allowPrivateTargets: boolean; caFile?: string; operatorPrivateTargets: string[] };
  webhooks: { pollIntervalMs: number; leaseMs: number };
  passkeys: {
    policyGraceDays: number;
    mds: { url?: string; file?: string; rootCertificateFile?: string; refreshHours: number };
  };
  telemetry: TelemetrySettings;
}

export interface GatewaySettings {
  host: string;
  port: number;
  workers: number | 'auto';
  tls: TlsSettings;
  publicUrl?: string;
  controlPlane: string;
  upstream?: string;
  upstreams: Array<{ path: string; url: string }>;
  clientId?: string;
  clientSecret?: string;
  trustedProxies: string[];
  cookieKeys?: string[];
  sessionLifetime: number;
  assertionLifetime: number;
  upstreamTimeout: number;
  controlPlaneTimeoutMs: number;
  upstreamConnections: number;
  dpopNonce: boolean;
  defaultLocale: Locale;
  dataDir: string;
  redisUrl?: string;
  redis: RedisSettings;
  logLevel: LogLevel;
  accessLog: boolean;
  telemetry: TelemetrySettings;
}

export type ControlPlaneConfig = DeepReadonly<ControlPlaneSettings>;
export type GatewayConfig = DeepReadonly<GatewaySettings>;
