import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import type { Duplex } from 'node:stream';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { SignJWT, createLocalJWKSet, exportJWK, type JSONWebKeySet } from 'jose';
import { loadGatewayConfig } from '#config/load.js';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import { GATEWAY_CONFIG_TYP } from '#lib/gateway-protocol/signed-config.js';
import {
  parseCookieHeader,
  readLoginCookie,
  writeSessionCookies,
  type CookieKey,
  type GateSession,
} from '#lib/gateway-protocol/session-cookie.js';
import { startGateway, type RunningGateway } from '../../gateway/src/server.js';
import type { GatewayDeps } from '../../gateway/src/app.js';
import type { SharedState } from '#lib/runtime/shared-state/index.js';
import { tempDir } from '../helpers/build.js';
import { dpopKey } from '../helpers/oidc.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

export const CONTROL_PLANE = 'http://localhost:4400';
export const CLIENT_ID = 'gw-test';

/** The control plane's signing key, as a test stands in for it. */
const cp = generateKeyPairSync('ec', { namedCurve: 'P-256' });
let cachedJwks: JSONWebKeySet | undefined;
export async function controlPlaneJwks(): Promise<JSONWebKeySet> {
  cachedJwks ??= { keys: [{ ...(await exportJWK(cp.publicKey)), kid: 'cp-1', alg: 'ES256', use: 'sig' }] };
  return cachedJwks;
}

export async function signConfig(
  version: number,
  policy: GatewayPolicy,
  now = Date.now(),
  issuer = CONTROL_PLANE,
  audience = CLIENT_ID,
  /** More claims of the config: `access_directory`, `revoked_sessions`. */
  claims: Record<string, unknown> = {},
): Promise<string> {
  const iat = Math.floor(now / 1000);
  return new SignJWT({ ...claims, version, gateway: policy })
    .setProtectedHeader({ alg: 'ES256', kid: 'cp-1', typ: GATEWAY_CONFIG_TYP })
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt(iat)
    .setExpirationTime(iat + 600)
    .sign(cp.privateKey);
}

export interface TokenInput {
  audience: string;
  sub?: string;
  scope?: string;
  assurance?: string;
  principal?: 'human' | 'agent';
  jkt?: string;
  issuer?: string;
  expiresIn?: number;
  /** The token's `client_id`; the gateway's own client by default. */
  clientId?: string;
  /** RFC 8693 `act` (an exchanged token). */
  act?: Record<string, unknown>;
}

export async function signAccessToken(input: TokenInput): Promise<string> {
  const iat = Math.floor(Date.now() / 1000);
  const sub = input.sub ?? 'user-1';
  const claims: Record<string, unknown> = {
    client_id: input.clientId ?? CLIENT_ID,
    scope: input.scope ?? 'read',
    acr: input.assurance ?? 'passkey',
    amr: ['hwk'],
    auth_time: iat,
    svc: {
      assurance: input.assurance ?? 'passkey',
      principal:
        input.principal === 'agent'
          ? { type: 'agent', id: 'agt_x', owner: 'user-9', kind: 'bot' }
          : { type: 'human', id: sub },
    },
  };
  if (input.jkt) claims['cnf'] = { jkt: input.jkt };
  if (input.act) claims['act'] = input.act;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: 'cp-1', typ: 'at+jwt' })
    .setIssuer(input.issuer ?? CONTROL_PLANE)
    .setAudience(input.audience)
    .setSubject(sub)
    .setIssuedAt(iat)
    .setExpirationTime(iat + (input.expiresIn ?? 300))
    .setJti(randomUUID())
    .sign(cp.privateKey);
}

/** An ID token as the stand-in control plane would sign it; `claims` override the defaults, `header` the protected header. */
export async function signIdToken(
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
): Promise<string> {
  const iat = Math.floor(Date.now() / 1000);
  const sub = typeof claims['sub'] === 'string' ? claims['sub'] : 'user-1';
  return new SignJWT({
    iss: CONTROL_PLANE,
    aud: CLIENT_ID,
    sub,
    iat,
    exp: iat + 300,
    auth_time: iat,
    acr: 'passkey',
    amr: ['hwk'],
    email: 'ada@example.test',
    email_verified: true,
    svc: { assurance: 'passkey', principal: { type: 'human', id: sub } },
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', kid: 'cp-1', typ: 'JWT', ...header })
    .sign(cp.privateKey);
}

/** A client's DPoP key and a proof maker for it; `nonce` is a server nonce (RFC 9449 §8). */
export async function dpopClient(): Promise<{
  jkt: string;
  proof(htm: string, htu: string, accessToken?: string, nonce?: string): Promise<string>;
}> {
  const key = await dpopKey();
  return {
    jkt: key.jkt,
    proof: (htm, htu, accessToken, nonce) =>
      key.proof({ htm, htu, ...(accessToken ? { accessToken } : {}), ...(nonce ? { nonce } : {}) }),
  };
}

/** A signed config's directory for access rules: `user-1` (the default session) is a member of `acme`. */
export const ACCESS_DIRECTORY = {
  access_directory: { identities: { 'user-1': { username: 'ada', orgs: [{ slug: 'acme', role: 'member' }] } } },
};

/**
 * The identity headers the upstream receives for the default `sessionCookie()` session
 * (X-Auth-Assertion aside: it is a fresh JWT, checked on its own).
 */
export const DEFAULT_IDENTITY = {
  'x-auth-subject': 'user-1',
  'x-auth-principal-type': 'human',
  'x-auth-assurance': 'passkey',
  'x-auth-email': 'ada@example.test',
} as const;

/** Sends raw bytes and returns the raw response (header names exactly as typed); end `text` with `Connection: close`. */
export async function rawHttp(url: string, text: string): Promise<string> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  await once(socket, 'connect');
  // Not end(): a server sees a half-closed socket as gone before it answers. `Connection: close` ends it.
  socket.write(text);
  let out = '';
  socket.setEncoding('utf8');
  for await (const chunk of socket) out += chunk;
  return out;
}

export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  rawHeaders: string[];
  body: string;
}

export interface Upstream {
  url: string;
  server: Server;
  seen: Seen[];
  last(): Seen;
}

/** A local upstream that echoes what it received as JSON (and records it); `handler` takes over when it returns true. */
export async function startUpstream(
  t: Tap,
  handler?: (req: IncomingMessage, res: ServerResponse) => boolean,
  onUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
): Promise<Upstream> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    if (handler?.(req, res)) return;
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body,
      });
      res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'yes', 'proxy-authenticate': 'Basic' });
      res.end(JSON.stringify({ ok: true, url: req.url, headers: req.headers, body }));
    });
  });
  if (onUpgrade) server.on('upgrade', onUpgrade);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, seen, last: () => seen.at(-1)! };
}

const SWITCHING_PROTOCOLS =
  'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n';

/**
 * An upstream that records every upgrade request and accepts it with 101; with `echo` the socket
 * then sends back what it receives, otherwise it ends after the 101.
 */
export async function startUpgradingUpstream(t: Tap, options: { echo?: boolean } = {}): Promise<Upstream> {
  const upstream = await startUpstream(t, undefined, (req, socket) => {
    upstream.seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      body: '',
    });
    if (!options.echo) return void socket.end(SWITCHING_PROTOCOLS);
    socket.write(SWITCHING_PROTOCOLS);
    socket.pipe(socket);
  });
  return upstream;
}

export interface TestGateway {
  running: RunningGateway;
  /** The public URL. */
  url: string;
  /** Where it listens (differs from `url` when a public URL is configured). */
  local: string;
  dataDir: string;
  logs: string[];
  configure(policy: GatewayPolicy, version?: number, claims?: Record<string, unknown>): Promise<void>;
  sessionCookie(session?: Partial<GateSession>): Promise<string>;
}

/**
 * A gateway on a free port. By default it trusts the stand-in control-plane key above; with
 * `remoteKeys` it fetches the JWKS of `overrides.controlPlane` (a real control plane) instead.
 * Configs are signed with the stand-in key for the configured control plane and client id.
 */
export async function startTestGateway(
  t: Tap,
  options: {
    upstream?: string;
    policy?: GatewayPolicy;
    overrides?: Record<string, unknown>;
    dataDir?: string;
    state?: SharedState;
    remoteKeys?: boolean;
    deps?: Partial<GatewayDeps>;
  } = {},
): Promise<TestGateway> {
  const dataDir = options.dataDir ?? tempDir(t, 'keyplane-gw-');
  const config = loadGatewayConfig({
    env: {},
    overrides: {
      port: 0,
      dataDir,
      controlPlane: CONTROL_PLANE,
      clientId: CLIENT_ID,
      logLevel: 'info',
      ...(options.upstream ? { upstream: options.upstream } : {}),
      ...options.overrides,
    },
  });
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _e, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const jwks = await controlPlaneJwks();
  const running = await startGateway(config, {
    ...(options.remoteKeys ? {} : { controlPlaneKeys: createLocalJWKSet(jwks) }),
    logStream,
    ...(options.state ? { state: options.state } : {}),
    ...options.deps,
  });
  t.teardown(() => running.close());
  let version = 0;
  const gateway: TestGateway = {
    running,
    url: running.url,
    local: `http://127.0.0.1:${(running.server.address() as AddressInfo).port}`,
    dataDir,
    logs,
    async configure(policy, next, claims) {
      version = next ?? version + 1;
      await running.gateway.configHolder.accept(
        await signConfig(
          version,
          policy,
          Date.now(),
          config.controlPlane.replace(/\/$/, ''),
          config.clientId ?? CLIENT_ID,
          claims,
        ),
        jwks,
        Date.now(),
      );
    },
    async sessionCookie(session = {}) {
      const full: GateSession = {
        sid: randomUUID(),
        sub: 'user-1',
        principalType: 'human',
        assurance: 'passkey',
        scopes: ['read'],
        email: 'ada@example.test',
        emailVerified: true,
        ...session,
      };
      const cookies = await writeSessionCookies(full, {
        keys: running.gateway.cookieKeys,
        now: Date.now(),
        secure: false,
        ttlSeconds: 600,
      });
      return cookies.map((line) => line.split(';')[0]).join('; ');
    },
  };
  if (options.policy) await gateway.configure(options.policy);
  return gateway;
}

/**
 * Reads a gateway's redirect to sign in: the control plane's authorize URL it points at, and the
 * return path and requested assurance kept in the per-login cookie it set. Null when the answer
 * is not such a redirect.
 */
export async function signInRedirect(
  gateway: { cookieKeys: readonly CookieKey[] },
  answer: { statusCode: number; headers: Record<string, string | string[] | undefined> },
  controlPlane = CONTROL_PLANE,
): Promise<{ authorize: URL; returnTo: string; acr: string | null } | null> {
  const location = answer.headers['location'];
  if (
    answer.statusCode !== 302 ||
    typeof location !== 'string' ||
    !location.startsWith(`${controlPlane}/auth/authorize?`)
  )
    return null;
  const authorize = new URL(location);
  const state = authorize.searchParams.get('state') ?? '';
  const lines = [answer.headers['set-cookie'] ?? []].flat().map(String);
  const jar = parseCookieHeader(lines.map((line) => line.split(';')[0]).join('; '));
  const login = await readLoginCookie(jar, state, { keys: gateway.cookieKeys, now: Date.now(), secure: false });
  return login ? { authorize, returnTo: login.returnTo, acr: authorize.searchParams.get('acr_values') } : null;
}
