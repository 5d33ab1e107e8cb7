/**
 * The one description of every configuration key: type, default, documentation, and where
 * the environment or a flag may set it. Defaults, validation and docs/configuration.md are all
 * derived from these two schemas, so they cannot drift apart.
 */

import { LOCALES } from '#lib/i18n/locales.js';

export interface KeyDoc {
  description: string;
  env?: string;
  flag?: string;
  secret?: boolean;
}

type Leaf = Record<string, unknown> & KeyDoc & { type: string | string[] };
type Group = {
  type: 'object';
  description?: string;
  properties: Record<string, Node>;
  additionalProperties: false;
  required?: string[];
};
export type Node = Leaf | Group;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const LOOPBACK = ['127.0.0.1/8', '::1'];
/** `host:port`, the host a name, an IPv4 address or a bracketed IPv6 address. */
/** A C2SP signed-note verifier key: `<name>+<8 hex key ID>+<base64 of type and 32-byte Ed25519 key>`. */
const VKEY = '^[^\\s+]+\\+[0-9a-f]{8}\\+[A-Za-z0-9+/]{44}$';
const HOST_PORT = '^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+):[0-9]{1,5}$';

const host = (def: string): Leaf => ({
  type: 'string',
  minLength: 1,
  default: def,
  flag: '--host',
  description: 'Address to listen on.',
});
const port = (def: number): Leaf => ({
  type: 'integer',
  minimum: 0,
  maximum: 65535,
  default: def,
  flag: '--port',
  description: 'TCP port to listen on; 0 picks a free port.',
});
/** `--workers N|auto` (docs/scaling.md#workers): processes serving the one port. */
const workers: Leaf = {
  type: ['integer', 'string'],
  minimum: 1,
  maximum: 256,
  pattern: '^auto$',
  default: 1,
  env: 'KEYPLANE_WORKERS',
  flag: '--workers',
  description:
    'Processes serving the one port (node:cluster): a number, or `auto` for one per core. Shared state lives in Redis when configured, else with the primary process (docs/scaling.md#workers).',
};
/** `--tls-cert FILE --tls-key FILE` (docs/operations.md#tls): HTTPS, both files read again on SIGHUP. */
const tls = (protocols: string): Group =>
  group(`TLS (docs/operations.md#tls): ${protocols}; set both or neither`, {
    cert: {
      type: 'string',
      minLength: 1,
      env: 'KEYPLANE_TLS_CERT',
      flag: '--tls-cert',
      description: 'PEM certificate chain file; read again on SIGHUP without dropping connections.',
    },
    key: {
      type: 'string',
      minLength: 1,
      env: 'KEYPLANE_TLS_KEY',
      flag: '--tls-key',
      description: 'PEM private key file of the certificate; read again on SIGHUP.',
    },
  });

const seconds = (def: number, description: string): Leaf => ({
  type: 'integer',
  minimum: 1,
  maximum: 31_536_000,
  default: def,
  description: `${description} (seconds).`,
});
const count = (def: number, description: string): Leaf => ({
  type: 'integer',
  minimum: 1,
  maximum: 1_000_000,
  default: def,
  description,
});

const group = (description: string, properties: Record<string, Node>): Group => ({
  type: 'object',
  description,
  properties,
  additionalProperties: false,
});

const common = {
  logLevel: {
    type: 'string',
    enum: LOG_LEVELS,
    default: 'info',
    description: 'Minimum level of the JSON log lines written to stderr.',
  } as Leaf,
  dataDir: {
    type: 'string',
    minLength: 1,
    default: './data',
    env: 'KEYPLANE_DATA_DIR',
    flag: '--data',
    description: 'Directory for the embedded store, keys and the dev mail outbox.',
  } as Leaf,
  redisUrl: {
    type: 'string',
    pattern: '^rediss?://',
    env: 'KEYPLANE_REDIS_URL',
    flag: '--redis',
    description:
      'Redis URL for shared state (rate limits, one-time values, replay caches); unset keeps it in-process unless `redis.sentinels` or `redis.clusterNodes` is set.',
  } as Leaf,
  redis: group('Redis for shared state: Sentinel, Cluster and timeouts (docs/scaling.md#redis)', {
    sentinels: {
      type: 'array',
      items: { type: 'string', pattern: HOST_PORT },
      default: [],
      env: 'KEYPLANE_REDIS_SENTINELS',
      description:
        'Redis Sentinel addresses (`host:port`, comma-separated in the environment). With `redis.masterName`, shared state is kept on the master the Sentinels name and follows it through failovers. Instead of `redisUrl`.',
    },
    masterName: {
      type: 'string',
      minLength: 1,
      env: 'KEYPLANE_REDIS_MASTER_NAME',
      description: 'The master name the Sentinels monitor (`sentinel monitor <name> …`).',
    },
    clusterNodes: {
      type: 'array',
      items: { type: 'string', pattern: HOST_PORT },
      default: [],
      env: 'KEYPLANE_REDIS_CLUSTER_NODES',
      description:
        'Some nodes of a Redis Cluster (`host:port`); the rest are discovered. Instead of `redisUrl` and `redis.sentinels`.',
    },
    password: {
      type: 'string',
      minLength: 1,
      env: 'KEYPLANE_REDIS_PASSWORD',
      secret: true,
      description:
        'Password of the Redis servers reached through Sentinel or Cluster (with `redisUrl` the URL carries it).',
    },
    sentinelPassword: {
      type: 'string',
      minLength: 1,
      env: 'KEYPLANE_REDIS_SENTINEL_PASSWORD',
      secret: true,
      description: 'Password of the Sentinels themselves, when they require one.',
    },
    tls: {
      type: 'boolean',
      default: false,
      description:
        'TLS to the Sentinels and the servers, or to the Cluster nodes (`rediss://` does it for `redisUrl`).',
    },
    commandTimeoutMs: {
      type: 'integer',
      minimum: 50,
      maximum: 60_000,
      default: 1000,
      description:
        'Longest a request waits for one shared-state operation (queued while Redis reconnects or fails over, then its answer) before it answers 503 `unavailable`.',
    },
    waitReplicas: {
      type: 'integer',
      minimum: 0,
      maximum: 16,
      default: 0,
      description:
        'Replicas that must confirm each one-time write (a consumed challenge, a replay-cache entry, a rate-limit count) before it counts (Redis `WAIT`), so a failover cannot bring a consumed challenge back. Set 1 with Sentinel or Cluster (docs/scaling.md#redis).',
    },
    waitTimeoutMs: {
      type: 'integer',
      minimum: 10,
      maximum: 10_000,
      default: 250,
      description:
        'How long a one-time write waits for `redis.waitReplicas` confirmations before it answers 503 `unavailable` (less than `redis.commandTimeoutMs`).',
    },
  }),
};

/**
 * OpenTelemetry traces (docs/observability.md#traces), the same keys in both services. Named as
 * the contract names them (snake_case, as OpenTelemetry's own configuration writes them).
 */
const telemetry = (serviceName: string): Group =>
  group('OpenTelemetry traces, off unless an OTLP endpoint is set (docs/observability.md#traces)', {
    otlp: group('Where spans are sent (OTLP/HTTP)', {
      endpoint: {
        type: 'string',
        format: 'uri',
        pattern: '^https?://',
        env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
        description:
          'Base URL of an OTLP/HTTP receiver (an OpenTelemetry Collector, Jaeger, Tempo); spans are POSTed as OTLP JSON to `<endpoint>/v1/traces`. Unset: tracing is off and costs nothing.',
      },
      headers: {
        type: 'object',
        additionalProperties: { type: 'string' },
        env: 'OTEL_EXPORTER_OTLP_HEADERS',
        secret: true,
        description:
          'Headers sent with every export (a vendor API key): a mapping in YAML, `name=value` pairs separated by commas in the environment.',
      },
    }),
    service_name: {
      type: 'string',
      minLength: 1,
      default: serviceName,
      description: "The `service.name` of this service's spans.",
    },
    sample_ratio: {
      type: 'number',
      minimum: 0,
      maximum: 1,
      default: 1,
      env: 'OTEL_TRACES_SAMPLER_ARG',
      description:
        'Share of new traces kept (0 to 1); a request continuing a trusted parent follows its sampling decision.',
    },
  });

export const controlPlaneSchema: Group = group('Control plane', {
  host: host('127.0.0.1'),
  port: port(4400),
  workers,
  tls: tls('HTTP/1.1 and HTTP/2 by ALPN'),
  issuer: {
    type: 'string',
    format: 'uri',
    pattern: '^https?://[^/?#]+(/[^?#]*[^/?#])?$',
    env: 'KEYPLANE_ISSUER',
    flag: '--issuer',
    description:
      'Public base URL and OIDC issuer, without a trailing slash. Unset on a loopback host: http://localhost:<port>.',
  },
  dataDir: common.dataDir,
  redisUrl: common.redisUrl,
  redis: common.redis,
  databaseUrl: {
    type: 'string',
    pattern: '^postgres(ql)?://',
    env: 'KEYPLANE_DATABASE_URL',
    flag: '--database',
    secret: true,
    description:
      'PostgreSQL URL (postgres://user:pass@host:5432/db) for durable state; several control planes may share it. Unset keeps embedded SQLite in the data dir.',
  },
  database: group('Durable storage', {
    migrateOnStart: {
      type: 'boolean',
      default: true,
      description:
        "Apply every schema migration the store lacks when the control plane starts (docs/operations.md#upgrades). Off: start refuses a store whose migrations are not exactly this release's, and `keyplane migrate` applies them.",
    },
    poolSize: {
      type: 'integer',
      minimum: 1,
      maximum: 200,
      default: 10,
      description: 'PostgreSQL connections each control plane keeps (unused with SQLite).',
    },
    connectTimeoutMs: {
      type: 'integer',
      minimum: 50,
      maximum: 60_000,
      default: 2000,
      description:
        'Longest a request waits for a PostgreSQL connection (a free one from the pool, or a new one) before it answers 503 `unavailable`.',
    },
    queryTimeoutMs: {
      type: 'integer',
      minimum: 50,
      maximum: 600_000,
      default: 5000,
      description:
        "Longest a request waits for one PostgreSQL statement's answer before it answers 503 `unavailable`; the connection is then dropped (docs/scaling.md#postgresql-failover).",
    },
  }),
  masterKey: {
    type: 'string',
    minLength: 32,
    env: 'KEYPLANE_MASTER_KEY',
    secret: true,
    description:
      'Key (32 characters or more) that encrypts private keys and secrets at rest. Unset: a dev key is generated in the data dir (mode 0600) with a warning.',
  },
  adminToken: {
    type: 'string',
    minLength: 32,
    env: 'KEYPLANE_ADMIN_TOKEN',
    secret: true,
    description:
      'Operator bearer token for the admin API and RFC 7591 initial access token. No default: unset disables both.',
  },
  logLevel: common.logLevel,
  http: group('HTTP server', {
    bodyLimit: {
      type: 'integer',
      minimum: 1024,
      maximum: 16_777_216,
      default: 1_048_576,
      description: 'Largest accepted request body (bytes); larger bodies get 413.',
    },
    trustedProxies: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      default: LOOPBACK,
      description: 'Addresses (IPs or CIDR ranges) whose X-Forwarded-* headers are believed.',
    },
  }),
  dns: group('DNS look-ups (agent and org site domain control)', {
    resolvers: {
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: 100 },
      default: [],
      description:
        "Resolvers (`host` or `host:port`) asked for `_svc-agent.<domain>` and `_keyplane.<host>` TXT records; empty uses the system's.",
    },
  }),
  keys: group('Signing keys', {
    rotateEveryDays: {
      type: 'integer',
      minimum: 0,
      maximum: 3650,
      default: 90,
      description: 'Rotate the ES256 signing key after this many days; 0 rotates only on `keyplane keys rotate`.',
    },
    retainRetiredDays: {
      type: 'integer',
      minimum: 1,
      maximum: 36_500,
      default: 3650,
      description: 'Keep a retired key in the JWKS this long, so tokens and ledger checkpoints it signed still verify.',
    },
  }),
  lifetimes: group('Lifetimes of codes, tokens and sessions', {
    authorizationCode: seconds(60, 'Authorization code'),
    accessToken: seconds(600, 'Access token'),
    idToken: seconds(600, 'ID token'),
    refreshTokenAbsolute: seconds(2_592_000, 'Refresh token family, from first issue'),
    refreshTokenIdle: seconds(1_209_600, 'Refresh token, since last use'),
    sessionAbsolute: seconds(1_209_600, 'Session, from sign-in'),
    sessionIdle: seconds(259_200, 'Session, since last use'),
    magicLink: seconds(600, 'Magic link'),
    emailVerification: seconds(86_400, 'Email verification link'),
    challenge: seconds(300, 'WebAuthn challenge'),
    stepUp: seconds(300, 'Window in which a step-up counts as `sensitive`'),
  }),
  limits: group('Rate limits and lockout', {
    authPerIpPerMinute: count(60, 'Requests per client IP per minute on each credential path under /auth.'),
    authPerAccountPerMinute: count(20, 'Attempts per account per minute on each credential path.'),
    lockoutThreshold: count(5, 'Failed TOTP or recovery codes before the account is locked for that method.'),
    lockoutSeconds: seconds(900, 'Length of a lockout'),
    magicLinksPerAddressPerHour: count(5, 'Magic links sent to one address per hour.'),
  }),
  scan: group('Website posture scan (docs/scan.md)', {
    publicPerIpPerHour: count(10, 'Anonymous `POST /scan` requests per client IP per hour.'),
    publicPerHostPerHour: count(
      6,
      'Scans of one target host per hour through the public scan, whoever asks (cached results do not count).',
    ),
    cacheSeconds: seconds(
      300,
      'A public scan of the same URL within this time answers with the stored Rating instead of fetching the site again',
    ),
    rescanIntervalHours: {
      type: 'integer',
      minimum: 0,
      maximum: 8760,
      default: 24,
      description: "Rescan every org's primary site this often (hours); 0 turns the schedule off.",
    },
  }),
  signup: group('Account creation', {
    selfService: {
      type: 'boolean',
      default: true,
      description:
        'Allow anyone to create an account with a passkey; false leaves only the founder link and invitations.',
    },
  }),
  mail: group('Outgoing mail', {
    smtpUrl: {
      type: 'string',
      pattern: '^smtps?://',
      env: 'KEYPLANE_SMTP_URL',
      secret: true,
      description: 'smtp:// or smtps:// URL; unset writes RFC 5322 files to <dataDir>/outbox/.',
    },
    from: {
      type: 'string',
      minLength: 3,
      default: 'Keyplane <no-reply@localhost>',
      description: 'From address of outgoing mail.',
    },
  }),
  i18n: group('Languages of pages and mail (docs/i18n.md)', {
    defaultLocale: {
      type: 'string',
      enum: [...LOCALES],
      default: 'en',
      env: 'KEYPLANE_DEFAULT_LOCALE',
      description:
        'Language of pages and mail when neither `ui_locales`, the language switcher, the account preference `lang` nor `Accept-Language` names a supported one.',
    },
  }),
  mcp: group('Read-only MCP tool server at /mcp (docs/mcp.md)', {
    perIpPerMinute: count(120, 'JSON-RPC requests to `POST /mcp` per client IP per minute.'),
  }),
  scim: group('SCIM 2.0 server per org at /scim/v2/orgs/{slug} (docs/scim.md)', {
    perTokenPerMinute: count(1200, 'SCIM calls per SCIM token per minute; more get 429 with `Retry-After`.'),
  }),
  contact: group('Contact channel at /contact (docs/contact.md)', {
    operatorAddress: {
      type: 'string',
      minLength: 3,
      maxLength: 254,
      pattern: '^[^@\\s]+@[^@\\s]+$',
      description: 'Where contact messages are mailed. Unset: they are stored and receipted, but no mail goes out.',
    },
    perAddressPerHour: count(5, 'Contact messages accepted per client IP, and per sender address, per hour.'),
    maxMessageChars: {
      type: 'integer',
      minimum: 100,
      maximum: 20_000,
      default: 4000,
      description: 'Longest contact message (characters); longer ones get 413 `message_too_long`.',
    },
    retentionDays: {
      type: 'integer',
      minimum: 1,
      maximum: 3650,
      default: 180,
      description:
        "Days a stored contact message (with the sender's address) is kept; older ones are deleted every hour. Its receipt, which holds neither, stays.",
    },
  }),
  ledger: group('Receipt ledger', {
    sealIntervalMs: {
      type: 'integer',
      minimum: 50,
      maximum: 60_000,
      default: 1000,
      description: 'Seal pending receipts into an epoch at most this often (milliseconds).',
    },
    sealMaxReceipts: count(10_000, 'Seal at once when this many receipts are pending.'),
    witnesses: {
      type: 'array',
      maxItems: 20,
      default: [],
      items: {
        type: 'object',
        required: ['name', 'url', 'key'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', pattern: '^[^\\s+]+$' },
          url: { type: 'string', format: 'uri', pattern: '^https?://' },
          key: { type: 'string', pattern: VKEY },
        },
      },
      description:
        "Witnesses asked to cosign each checkpoint (C2SP tlog-witness): `[{name, url, key}]`, `url` the witness's submission prefix (Keyplane posts to `<url>/add-checkpoint`), `key` its verifier key (`name+keyid+base64`). `GET /receipts/checkpoint` carries their cosignatures. YAML only.",
    },
    witness: group('This instance as a witness of other logs (C2SP tlog-witness, `POST /receipts/add-checkpoint`)', {
      logs: {
        type: 'array',
        maxItems: 100,
        default: [],
        items: {
          type: 'object',
          required: ['origin', 'key'],
          additionalProperties: false,
          properties: {
            origin: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^\\n]+$' },
            key: { type: 'string', pattern: VKEY },
          },
        },
        description:
          "The logs this instance witnesses: `[{origin, key}]`, `key` the log's note verifier key. List a log twice, once per key, while it rotates. Empty: `add-checkpoint` answers 404. YAML only.",
      },
      perOriginPerMinute: count(120, 'Checkpoints accepted per log origin and minute; more get 429 `rate_limited`.'),
    }),
  }),
  v1: group('Deprecated v1 script bridge (off unless a client registers `v1_bridge: true`)', {
    sessionTokenLifetime: {
      type: 'integer',
      minimum: 30,
      maximum: 3600,
      default: 300,
      description:
        'Lifetime of a v1 session token (macaroon) handed to a v1 return URL (seconds); the relying party redeems it at once with `POST /auth/verify-session`.',
    },
    deprecatedAt: {
      type: 'string',
      format: 'date',
      default: '2026-11-23',
      description: 'Date announced in the `Deprecation` header of every v1 response (RFC 9745).',
    },
    sunset: {
      type: 'string',
      format: 'date',
      default: '2027-06-30',
      description:
        'Date announced in the `Sunset` header of every v1 response (RFC 8594), after which the bridge may be removed.',
    },
  }),
  oidc: group('OpenID Connect provider', {
    defaultClientScopes: {
      type: 'array',
      items: { type: 'string', enum: ['openid', 'email', 'profile', 'orgs', 'offline_access'] },
      uniqueItems: true,
      default: ['openid', 'email', 'profile', 'offline_access'],
      description:
        'Scopes a client registered without `scope` gets (OIDC Dynamic Registration has no `scope` member); `openid` is always among them and `offline_access` only with the `refresh_token` grant. Narrow it to register less by default.',
    },
    backchannelLogout: group('OpenID Connect Back-Channel Logout 1.0: delivery of logout tokens', {
      pollIntervalMs: {
        type: 'integer',
        minimum: 100,
        maximum: 60_000,
        default: 2000,
        description:
          'Look for logout tokens due for delivery at least this often (milliseconds); a session that ends on this replica wakes the worker at once.',
      },
      maxAttempts: {
        type: 'integer',
        minimum: 1,
        maximum: 50,
        default: 10,
        description:
          'Delivery attempts per logout token before it is abandoned (receipted as `logout.backchannel_abandoned`); the waits between attempts grow from 5 s to 1 h.',
      },
    }),
    dpopNonce: {
      type: 'boolean',
      default: false,
      description:
        'Require a server-issued DPoP nonce (RFC 9449 §8, `use_dpop_nonce`) in proofs at the token and userinfo endpoints. Stateless: any replica with the master key accepts them.',
    },
  }),
  fetch: group(
    "Server-side fetches of URLs users give (a client's `jwks_uri`, `request_uris` and `backchannel_logout_uri`, agent cards, scans)",
    {
      allowPrivateTargets: {
        type: 'boolean',
        default: false,
        description:
          'Let server-side fetches and registered `jwks_uri`, `request_uris` and `backchannel_logout_uri` values reach loopback, private, link-local and metadata addresses. For tests only: it opens the control plane to server-side request forgery.',
      },
      caFile: {
        type: 'string',
        minLength: 1,
        description:
          'PEM file of extra CA certificates trusted by server-side fetches (private CAs), on top of the public roots.',
      },
      operatorPrivateTargets: {
        type: 'array',
        items: { type: 'string', minLength: 1, maxLength: 253 },
        maxItems: 100,
        default: [],
        description:
          "Private destinations the operator's own webhooks may reach: addresses or CIDR ranges (`10.0.0.0/8`) and host names. Org webhooks never may (docs/events.md#webhooks).",
      },
    },
  ),
  passkeys: group('Org passkey policies and the FIDO metadata they check (docs/passkeys.md#org-policy)', {
    policyGraceDays: {
      type: 'integer',
      minimum: 0,
      maximum: 365,
      default: 14,
      description:
        "Days that passkeys registered before an org's passkey policy took effect keep signing in when the policy refuses them (the account page asks for another meanwhile); a policy change may name its own `grace_days`.",
    },
    mds: group(
      'The FIDO Metadata Service BLOB that attestation statements are verified against (docs/passkeys.md#metadata)',
      {
        url: {
          type: 'string',
          pattern: '^https://',
          description:
            'URL of the BLOB (`https://mds3.fidoalliance.org/`), fetched through the guarded fetcher at start and every `refreshHours`. Unset with `file` unset: no metadata, so no attestation can be verified and a policy that requires one refuses every registration.',
        },
        file: {
          type: 'string',
          minLength: 1,
          description: 'A BLOB file (a JWT) read at start and every `refreshHours`, instead of `url`.',
        },
        rootCertificateFile: {
          type: 'string',
          minLength: 1,
          description:
            "PEM file of the root the BLOB's certificate chain must end at, instead of the FIDO Alliance's roots that SimpleWebAuthn bundles (GlobalSign Root CA R3 and R46): for a test BLOB.",
        },
        refreshHours: {
          type: 'integer',
          minimum: 1,
          maximum: 720,
          default: 24,
          description:
            'Load the BLOB again this often (hours); each load checks its signature chain again and keeps the previous BLOB when it fails or is not newer.',
        },
      },
    ),
  }),
  webhooks: group('Webhooks (docs/events.md#webhooks): delivery of signed receipts', {
    pollIntervalMs: {
      type: 'integer',
      minimum: 100,
      maximum: 60_000,
      default: 2000,
      description:
        'Look for webhook deliveries due at least this often (milliseconds); a receipt queued on this replica wakes the loop at once.',
    },
    leaseMs: {
      type: 'integer',
      minimum: 5000,
      maximum: 600_000,
      default: 60_000,
      description:
        'How long a replica holds the deliveries it claimed (milliseconds). Those of a replica that crashed are sent again by another, or by it once restarted, when this runs out: shorter resends sooner, but below 40 s (four rounds of 10 s attempts) a slow round may be sent twice.',
    },
  }),

  telemetry: telemetry('keyplane-control-plane'),
});

export const gatewaySchema: Group = group('Gateway', {
  host: host('127.0.0.1'),
  port: port(4480),
  workers,
  tls: tls('HTTP/1.1 only'),
  publicUrl: {
    type: 'string',
    format: 'uri',
    pattern: '^https?://[^/?#]+$',
    flag: '--public-url',
    description:
      'Public URL of the gateway (scheme, host, port). Unset: the listening URL. The redirect URI is <publicUrl>/_gate/callback.',
  },
  controlPlane: {
    type: 'string',
    format: 'uri',
    pattern: '^https?://',
    default: 'http://localhost:4400',
    flag: '--control-plane',
    description: 'Base URL (issuer) of the control plane.',
  },
  upstream: {
    type: 'string',
    format: 'uri',
    pattern: '^https?://',
    flag: '--upstream',
    description: 'URL of the protected app: every path no `upstreams` entry claims.',
  },
  upstreams: {
    type: 'array',
    maxItems: 50,
    default: [],
    items: {
      type: 'object',
      required: ['path', 'url'],
      additionalProperties: false,
      properties: {
        path: { type: 'string', pattern: '^/' },
        url: { type: 'string', format: 'uri', pattern: '^https?://[^/?#]+/?$' },
      },
    },
    description:
      'More apps behind the same gateway, by path prefix: `[{path, url}]`, the longest segment-wise prefix winning (as for policy routes). The path is forwarded unchanged and the url is an origin. YAML only.',
  },
  clientId: {
    type: 'string',
    minLength: 1,
    flag: '--client-id',
    description: "The gateway's OIDC client id at the control plane.",
  },
  clientSecret: {
    type: 'string',
    minLength: 1,
    flag: '--client-secret',
    env: 'KEYPLANE_GATEWAY_CLIENT_SECRET',
    secret: true,
    description: "The gateway's client secret.",
  },
  trustedProxies: {
    type: 'array',
    items: { type: 'string', minLength: 1 },
    default: LOOPBACK,
    flag: '--trusted-proxies',
    description: 'Addresses (IPs or CIDR ranges) whose forwarded and original-URI headers are believed.',
  },
  cookieKeys: {
    type: 'array',
    items: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
    env: 'KEYPLANE_GATEWAY_COOKIE_KEYS',
    secret: true,
    description:
      'Session cookie keys (32 bytes, base64url), newest first: the first encrypts, all decrypt, so keys rotate. Replicas must share them. Unset: one is generated in the data dir (mode 0600).',
  },
  sessionLifetime: seconds(43_200, 'Gateway browser session cookie, from sign-in'),
  assertionLifetime: {
    type: 'integer',
    minimum: 1,
    maximum: 300,
    default: 60,
    description: 'Lifetime of the X-Auth-Assertion JWT sent upstream (seconds, at most 300).',
  },
  upstreamTimeout: seconds(30, "Wait for the upstream's response headers before answering 504 `upstream_timeout`"),
  controlPlaneTimeoutMs: {
    type: 'integer',
    minimum: 100,
    maximum: 60_000,
    default: 5000,
    description:
      'Longest the gateway waits for the control plane (its token endpoint, key set and config) before it answers 503 `unavailable`; what the last signed config and the cached keys can serve goes on being served.',
  },
  upstreamConnections: count(128, 'Keep-alive connections the gateway holds open to the upstream.'),
  dpopNonce: {
    type: 'boolean',
    default: false,
    description:
      'Require a server-issued DPoP nonce (RFC 9449 §8, `use_dpop_nonce`) in the proofs of DPoP callers. Stateless: nonces derive from `cookieKeys`, so every replica sharing them accepts them; each lives 5 to 10 minutes.',
  },
  defaultLocale: {
    type: 'string',
    enum: [...LOCALES],
    default: 'en',
    env: 'KEYPLANE_GATEWAY_DEFAULT_LOCALE',
    description:
      "Language of the gateway's pages (sign-out, access denied) when neither its language switcher nor `Accept-Language` names a supported one (docs/i18n.md).",
  },
  dataDir: {
    type: 'string',
    minLength: 1,
    env: 'KEYPLANE_DATA_DIR',
    flag: '--data',
    description:
      "The gateway's own state directory: its saved signed config, its assertion signing key and a generated cookie key. Unset: `./data/gateways/<clientId>`, so two gateways started in one directory never share one; replicas of one gateway share theirs.",
  } as Leaf,
  redisUrl: common.redisUrl,
  redis: common.redis,
  logLevel: common.logLevel,
  accessLog: {
    type: 'boolean',
    default: true,
    env: 'KEYPLANE_GATEWAY_ACCESS_LOG',
    description:
      'One JSON line per request at level info (method, path with credentials redacted, client address, status, time, request id), as the control plane writes; false turns it off.',
  },

  telemetry: telemetry('keyplane-gateway'),
});

export const schemas = { 'control-plane': controlPlaneSchema, gateway: gatewaySchema } as const;
export type ConfigKind = keyof typeof schemas;
